"""q44 scheduler: the reference passes; every mutant fails, on the property it names.

Each mutant is graded at the default example count, as `grader check` would, but on its own
property only (a property's verdict does not depend on the others), which keeps the file
within its time budget on two cores.
"""

import subprocess
import sys

import pytest

from graders import registry, runner
from graders import mutants
from solutions.exercises.scheduler import Scheduler

EX = registry.get("scheduler")
REFERENCE = EX.reference
MUTANTS = mutants.catalogue(EX)
SMALL = 10  # examples where a test needs a grade, not the default's reach


def test_reference_passes_every_property_at_the_default_count(capsys):
    """Also the benchmark: one full check at the default example count (budget: 15 s)."""
    verdict = runner.grade(EX, REFERENCE.read_text(), "reference.py")
    with capsys.disabled():
        print(f"\n[benchmark] scheduler reference, {verdict.examples} examples x "
              f"{len(EX.runs)} run(s) over {len(verdict.properties)} properties: {verdict.seconds:.1f} s")
    assert verdict.passed, [(p.name, p.reason) for p in verdict.properties if not p.passed]
    assert verdict.exit_status == 0 and verdict.score == 1.0


def test_at_least_eight_mutants_cover_every_property():
    assert len(MUTANTS) >= 8
    assert {m.property for m in MUTANTS} == {p.name for p in EX.properties}


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_mutant_fails_on_its_property(mutant):
    expected = mutant.property
    only = EX.only(expected)
    verdict = runner.grade(only, mutant.source(), mutant.name, shrink=False)  # same verdict
    result = verdict.result(expected)
    assert verdict.exit_status == 1 and not result.passed, f"{mutant.name} passed {expected}"
    assert not result.reason.startswith(("not checked", "sandbox", "the submission's behaviour")), \
        result.reason
    assert "Scheduler(" in result.script


@pytest.mark.parametrize("name, prop", [("admits_while_swapped", "resume-first"),
                                        ("cap_counts_admissions", "budget")])
def test_shrunk_repro_is_short(name, prop):
    """With shrinking (as `grader check` runs), the repro is a handful of calls."""
    mutant = mutants.find(EX, name)
    only = EX.only(prop)
    result = runner.grade(only, mutant.source(), mutant.name).result(prop)
    assert not result.passed and result.script.count("\n") < 30, result.script


def test_one_mutant_fails_only_where_it_should():
    """A full grade of one mutant: the property it names fails, the unrelated ones pass."""
    mutant = mutants.find(EX, "admits_after_preempting")
    verdict = runner.grade(EX, mutant.source(), mutant.name, examples=8)
    failed = set(verdict.failed)  # unrelated ones pass, or are not checked (never failed)
    assert "resume-first" in failed
    assert {"budget", "kv-capacity", "one-queue", "no-lost-output"}.isdisjoint(failed), failed


def test_same_seed_same_verdict_and_repro():
    source = mutants.find(EX, "oldest_preempted").source()
    only = EX.only("victim-newest")
    a = runner.grade(only, source, "m.py", seed=7, examples=SMALL)
    b = runner.grade(only, source, "m.py", seed=7, examples=SMALL)
    assert [(p.passed, p.reason, p.script) for p in a.properties] == \
           [(p.passed, p.reason, p.script) for p in b.properties]


def test_repro_script_runs_and_shows_the_bug(tmp_path):
    mutant = mutants.find(EX, "budget_off_by_one")
    (tmp_path / "m.py").write_text(mutant.source())
    only = EX.only("budget")
    verdict = runner.grade(only, mutant.source(), "m.py", examples=SMALL)
    (tmp_path / "repro.py").write_text(verdict.properties[0].script)
    done = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_the_reference_walks_the_three_queues():
    """A hand-made trace: the newest admission is preempted, swapped, resumed first."""
    s = Scheduler(token_budget=4, max_seqs=2, num_blocks=2, block_size=2, preemption="swap")
    s.add_request(0, 2, 3)
    s.add_request(1, 1, 3)
    s.add_request(2, 1, 1)
    assert s.schedule() == {"prefill": [[0, 2], [1, 1]], "decode": [], "preempted": []}
    assert s.update([]) == []
    # request 0 needs a second block for its third token: request 1 (newest) is swapped out
    assert s.schedule() == {"prefill": [], "decode": [0], "preempted": [1]}
    assert s.queues() == {"waiting": [2], "running": [0], "swapped": [1]}
    assert s.update([]) == []
    # no room for request 1 to swap back in, so request 2 waits too (no overtaking)
    assert s.schedule() == {"prefill": [], "decode": [0], "preempted": []}
    assert s.update([]) == [0]
    assert s.schedule() == {"prefill": [[2, 1]], "decode": [1], "preempted": []}
    assert s.update([1]) == [1, 2]
    assert s.queues() == {"waiting": [], "running": [], "swapped": []}


@pytest.mark.parametrize("args, word", [
    ((0, 1, 1, 1, "recompute"), "token_budget"),
    ((2, 3, 1, 1, "recompute"), "max_seqs"),
    ((2, 1, 1, 1, "lru"), "preemption"),
])
def test_reference_rejects_bad_configuration(args, word):
    with pytest.raises(ValueError, match=word):
        Scheduler(*args)
