"""Verdicts under load: every reference and every catalogued mutant, graded while BUSY
processes spin on two cores (issue 20: 4 busy processes on 2 cores).

    python benchmarks/grader_load.py [--busy 4] [--examples N]

A reference must pass every property and a mutant must fail its named property; no property
may be cut by a limit. Prints one line per exercise and the failures, if any; exit 1 on any.
"""

import argparse
import os
import subprocess
import sys
import time

from graders import mutants, registry, runner


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--busy", type=int, default=4)
    parser.add_argument("--examples", type=int, default=None, help="default: each exercise's")
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))[:2]
    os.sched_setaffinity(0, cores)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    for p in busy:
        os.sched_setaffinity(p.pid, cores)
    bad = []
    try:
        for name, ex in registry.all_exercises().items():
            start, cpu = time.monotonic(), os.times()
            ref = runner.grade(ex, ex.reference.read_text(), "reference.py", examples=args.examples)
            if not ref.passed:
                bad.append(f"{name} reference: " + "; ".join(
                    f"{p.name}: {p.reason}" for p in ref.properties if not p.passed))
            caught, catalogue = 0, mutants.catalogue(ex)
            for mutant in catalogue:
                result = runner.grade_mutant(ex, mutant, examples=args.examples)
                if result.failed and not result.reason.startswith("sandbox"):
                    caught += 1
                else:
                    bad.append(f"{name} {mutant.name}: {result.outcome}: {result.reason}")
            used = os.times()
            print(f"{name:<18} reference {'pass' if ref.passed else 'FAIL'}, mutants caught "
                  f"{caught}/{len(catalogue)}, {time.monotonic() - start:.0f} s wall, "
                  f"{used.user + used.children_user - cpu.user - cpu.children_user:.0f} s CPU "
                  f"(grader side)", flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    print("\n".join(bad) or f"all verdicts held with {args.busy} busy processes on 2 cores")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
