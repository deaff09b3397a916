"""grader list | show EX [--coverage [--seed N]] | init EX [PATH] | check EX FILE [--json PATH] [--seed N] [--examples N]
       | mutant EX [NAME [PATH]]

Exit status of `check`: 0 pass, 1 fail, 2 the file cannot be loaded or lacks the interface,
3 no verdict: a limit, not the code, decided (rerun on a quieter machine).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from graders import registry, report, runner


def _exercise(name: str):
    try:
        return registry.get(name)
    except KeyError as exc:
        print(f"grader: {exc.args[0]}", file=sys.stderr)
        raise SystemExit(2) from None


def cmd_list(args) -> int:
    for ex in registry.all_exercises().values():
        print(f"{ex.name:<20} {ex.question:<5} {ex.title}")
    return 0


def cmd_show(args) -> int:
    ex = _exercise(args.exercise)
    if args.coverage:
        return show_coverage(ex, args.seed)
    print(f"{ex.question}: {ex.title}\n\n{ex.task}\nInterface:\n{ex.interface()}\n\nProperties:")
    for i, p in enumerate(ex.properties, 1):
        print(f"  {i}. {p.name}: {p.summary}")
    return 0


def show_coverage(ex, seed: int) -> int:
    """Grade the reference at the default example count and print how often its runs
    reached each outcome: every call's (method: ok or the exception it raised) and every
    path the machine labels. A path the spec names (Exercise.paths) reached fewer than
    MIN_REACHED times is a hole: exit status 1."""
    from graders.exercise import MIN_REACHED
    verdict = runner.grade(ex, ex.reference.read_text(), "reference.py", seed=seed)
    print(f"{ex.name}: what a default run of the reference reaches (seed {seed}, "
          f"{verdict.examples} examples x {len(ex.runs)} run(s); {report.headline(verdict)})")
    holes = coverage_holes(ex, verdict.coverage)
    width = max(map(len, verdict.coverage), default=10)
    for label in sorted(set(verdict.coverage) | set(ex.paths)):
        mark = ("  HOLE" if label in holes else "  (named by the spec)" if label in ex.paths
                else "")
        print(f"  {label:<{width}}  {verdict.coverage[label]:>6}{mark}")
    if holes:
        print(f"{len(holes)} named path(s) reached fewer than {MIN_REACHED} times")
    return 1 if holes or not verdict.passed else 0


def coverage_holes(ex, reached) -> list[str]:
    """The paths the spec names that a run reached fewer than MIN_REACHED times."""
    from graders.exercise import MIN_REACHED
    return [label for label in ex.paths if reached[label] < MIN_REACHED]


def cmd_init(args) -> int:
    ex = _exercise(args.exercise)
    path = Path(args.path or f"{ex.name.replace('-', '_')}.py")
    if path.exists():
        print(f"grader: {path} exists; not overwriting it", file=sys.stderr)
        return 2
    shutil.copyfile(ex.starter, path)
    print(f"wrote {path}; grade it with: grader check {ex.name} {path}")
    return 0


def cmd_check(args) -> int:
    ex = _exercise(args.exercise)
    try:
        source = Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"grader: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if args.examples is not None and args.examples < 1:
        print("grader: --examples must be at least 1", file=sys.stderr)
        return 2
    verdict = runner.grade(ex, source, args.file, seed=args.seed, examples=args.examples,
                           stop_at_first_failure=args.first_failure)
    print(report.text(verdict), end="")
    if args.json:
        report.write_json(verdict, args.json)
    return verdict.exit_status


def cmd_mutant(args) -> int:
    """List an exercise's mutant catalogue, or write one mutant out as a runnable file."""
    from graders import mutants
    ex = _exercise(args.exercise)
    if not args.name:
        for m in mutants.catalogue(ex):
            print(f"{m.name:<40} {m.property:<26} {m.label:<16} {m.link}")
        return 0
    try:
        mutant = mutants.find(ex, args.name)
    except KeyError as exc:
        print(f"grader: {exc.args[0]}", file=sys.stderr)
        return 2
    path = Path(args.path or f"{mutant.name}.py")
    if path.exists():
        print(f"grader: {path} exists; not overwriting it", file=sys.stderr)
        return 2
    header = (f"# Mutant {mutant.name} of {ex.name} ({mutant.label}"
              f"{': ' + mutant.link if mutant.link else ''}): {mutant.summary}\n"
              f"# It must fail property {mutant.property}.\n")
    path.write_text(header + mutant.source())
    print(f"wrote {path}; grade it with: grader check {ex.name} {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="grader", description="Grade an exercise submission "
                                     "with property tests, in a sandbox.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list exercises").set_defaults(fn=cmd_list)
    p = sub.add_parser("show", help="print an exercise's task and interface")
    p.add_argument("exercise")
    p.add_argument("--coverage", action="store_true",
                   help="grade the reference and count the outcomes its runs reach")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(fn=cmd_show)
    p = sub.add_parser("init", help="write a starter file")
    p.add_argument("exercise")
    p.add_argument("path", nargs="?")
    p.set_defaults(fn=cmd_init)
    p = sub.add_parser("check", help="grade a file")
    p.add_argument("exercise")
    p.add_argument("file")
    p.add_argument("--json", metavar="PATH", help="write a results.json (Exercism v3 shape)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--examples", type=int, default=None,
                   help="hypothesis examples per run (default: the exercise's)")
    p.add_argument("--first-failure", action="store_true",
                   help="stop at the first failed property (the rest: not checked)")
    p.set_defaults(fn=cmd_check)
    p = sub.add_parser("mutant", help="list the mutant catalogue, or write one mutant out")
    p.add_argument("exercise")
    p.add_argument("name", nargs="?")
    p.add_argument("path", nargs="?")
    p.set_defaults(fn=cmd_mutant)
    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
