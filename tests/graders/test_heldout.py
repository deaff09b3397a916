"""Held-out bugs: realistic slips written from the specs and kept apart from the catalogue
(tests/graders/heldout/<exercise>/*.diff, never shown to the strategies' authors as targets).
A plain `grader check` at the default seed and example count must catch every one of them.

A plain check runs one seeded hypothesis run per property, so grading the properties one at
a time, the bug's named property first, and stopping at the first that fails is the same
verdict for a fraction of the time. Nothing is shrunk (the verdict names the same failures,
only with longer repro scripts). When the runner can stop at the first failed property
itself, pass that option through FIRST_FAILURE and grade the whole exercise: one line.
"""

from pathlib import Path

import pytest

from graders import mutants, registry, runner

HERE = Path(__file__).parent / "heldout"
FIRST_FAILURE: dict = {"shrink": False}
EXERCISES = {ex.home.name: ex for ex in registry.all_exercises().values()}
BUGS = [(EXERCISES[d.name], p) for d in sorted(HERE.iterdir()) if d.is_dir()
        for p in sorted(d.glob("*.diff"))]


def test_about_thirty_held_out_bugs_over_every_exercise():
    assert len(BUGS) >= 25
    assert {ex.name for ex, _ in BUGS} == set(registry.all_exercises())


def first_failed(exercise, bug) -> str | None:
    order = [bug.property] + [p.name for p in exercise.properties if p.name != bug.property]
    for name in order:
        verdict = runner.grade(exercise.only(name), bug.source(), f"{bug.name}.py",
                               **FIRST_FAILURE)
        if verdict.exit_status == 1:
            return name
    return None


@pytest.mark.parametrize("exercise, path", BUGS, ids=lambda x: getattr(x, "stem", ""))
def test_a_plain_check_catches_it(exercise, path):
    bug = mutants.parse(path, exercise.reference)
    assert first_failed(exercise, bug), f"{bug.name} passed a plain check: {bug.summary}"
