"""Calls per second: the reference BlockAllocator in-process vs over the sandbox pipe.

    python benchmarks/grader_pipe.py

The grader pays the process boundary on every call; this says how much, so the default
example count can be sized to the 15 s budget.
"""

import time
from pathlib import Path

from graders.sandbox import Sandbox

REFERENCE = Path(__file__).resolve().parents[1] / "solutions" / "exercises" / "block_allocator.py"
N = 20_000


def rate(fn, n=N) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - start)


def main() -> None:
    ns: dict = {}
    exec(compile(REFERENCE.read_text(), str(REFERENCE), "exec"), ns)
    pool = ns["BlockAllocator"](8)
    pool.allocate()
    local = rate(lambda: pool.refcount(0))
    with Sandbox(REFERENCE.read_text(), "reference.py") as box:
        box.load("BlockAllocator", [])
        box.new([8])
        box.call("allocate")
        single = rate(lambda: box.call("refcount", 0), N // 4)
        batch = [("refcount", [0])] * 9
        batched = 9 * rate(lambda: box.call_many(batch), N // 20)
    print(f"in-process:          {local:>12,.0f} calls/s")
    print(f"pipe, one per trip:  {single:>12,.0f} calls/s  ({local / single:,.0f}x slower)")
    print(f"pipe, 9 per trip:    {batched:>12,.0f} calls/s  (invariant checks are batched)")


if __name__ == "__main__":
    main()
