"""CPU seconds each notebook's kernel spends executing it, against the 10 s budget.

    python benchmarks/notebooks.py [notebooks/<topic>/qNN-*.ipynb ...] [--jobs 2] [--budget 10]

Each notebook runs in a fresh kernel, as nbval runs it; after its last cell the kernel reports its
own user + system CPU time (imports included), so a busy machine inflates the figure far less than
it inflates wall clock. Prints one line per notebook, slowest first; exit 1 if any is over budget.
Nothing is written back to the notebooks.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
REPORT = "import resource as _r; _u = _r.getrusage(_r.RUSAGE_SELF); print(_u.ru_utime + _u.ru_stime)"


def cpu_seconds(path: Path) -> tuple[float, float]:
    """(kernel CPU seconds, wall seconds) for one execution of `path`."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(REPORT))
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    wall = time.perf_counter() - start
    return float(nb.cells[-1].outputs[0]["text"]), wall


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--budget", type=float, default=10.0, help="CPU seconds per notebook")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").rglob("*.ipynb")) + sorted((ROOT / "docs").glob("*.ipynb"))
    with ThreadPoolExecutor(args.jobs) as pool:
        times = dict(zip(paths, pool.map(cpu_seconds, paths)))
    over = 0
    for path, (cpu, wall) in sorted(times.items(), key=lambda kv: -kv[1][0]):
        flag = "  OVER" if cpu > args.budget else ""
        over += bool(flag)
        print(f"{cpu:6.1f} s CPU  {wall:6.1f} s wall  {path.relative_to(ROOT)}{flag}")
    total = sum(cpu for cpu, _ in times.values())
    print(f"{len(times)} notebooks, {total:.0f} s CPU in all; {over} over the {args.budget:.0f} s budget")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
