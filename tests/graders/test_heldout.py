"""Held-out bugs: realistic slips written from the specs and kept apart from the catalogue
(tests/graders/heldout/<exercise>/*.diff, never shown to the strategies' authors as targets).
A plain `grader check` at the default seed and example count must catch every one of them.

A plain check stopped at its first failed property, unshrunk, is the same verdict for a
fraction of the time (shrinking only makes the repro shorter).
"""

from pathlib import Path

import pytest

from graders import mutants, registry, runner

HERE = Path(__file__).parent / "heldout"
EXERCISES = {ex.home.name: ex for ex in registry.all_exercises().values()}
BUGS = [(EXERCISES[d.name], p) for d in sorted(HERE.iterdir()) if d.is_dir()
        for p in sorted(d.glob("*.diff"))]


def test_about_thirty_held_out_bugs_over_every_exercise():
    assert len(BUGS) >= 25
    assert {ex.name for ex, _ in BUGS} == set(registry.all_exercises())


def first_failed(exercise, bug) -> str | None:
    verdict = runner.grade(exercise, bug.source(), f"{bug.name}.py", shrink=False,
                           stop_at_first_failure=True)
    return verdict.failed[0] if verdict.failed else None


@pytest.mark.parametrize("exercise, path", BUGS, ids=lambda x: getattr(x, "stem", ""))
def test_a_plain_check_catches_it(exercise, path):
    bug = mutants.parse(path, exercise.reference)
    assert first_failed(exercise, bug), f"{bug.name} passed a plain check: {bug.summary}"
