"""What a default run reaches: every path an exercise's spec names (Exercise.paths: a refusal,
a MemoryError, an eviction, a revival, a partial chunk...) is reached at least MIN_REACHED
times by the default-seed check of its reference, so a bug on it has examples to show in.
`grader show EX --coverage` prints the same counts."""

import pytest

from graders import registry
from graders.cli import coverage_holes
from graders.exercise import MIN_REACHED

EXERCISES = list(registry.all_exercises().values())


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda ex: ex.name)
def test_a_default_run_reaches_every_named_path(exercise, reference_verdict):
    verdict = reference_verdict(exercise.name)
    assert verdict.passed, [(p.name, p.reason) for p in verdict.properties if not p.passed]
    assert exercise.paths, f"{exercise.name} names no path to count"
    holes = coverage_holes(exercise, verdict.coverage)
    assert not holes, {h: verdict.coverage[h] for h in holes}
    assert all(verdict.coverage[p] >= MIN_REACHED for p in exercise.paths)


def test_the_coverage_command_prints_the_counts(capsys):
    from graders.cli import main
    assert main(["show", "block-allocator", "--coverage"]) == 0
    out = capsys.readouterr().out
    assert "fork: empty table" in out and "copy_on_write: pool empty" in out
    assert "HOLE" not in out
