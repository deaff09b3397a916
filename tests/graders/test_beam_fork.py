"""beam-fork: the reference passes, every mutant fails the property it names, the bound is right."""

import subprocess
import sys

import pytest

from graders import registry, runner
from graders import mutants
from graders.exercises.beam_fork.model import BeamModel, readable, slot_of
from tests.graders.conftest import ROOT

EX = registry.get("beam-fork")
REFERENCE = ROOT / "solutions" / "exercises" / "beam_fork.py"
MUTANTS = mutants.catalogue(EX)


def test_reference_passes_every_property():
    verdict = runner.grade(EX, REFERENCE.read_text(), "reference.py", examples=30)
    assert verdict.passed, [(p.name, p.reason) for p in verdict.properties]
    assert verdict.exit_status == 0 and verdict.score == 1.0


def test_reference_is_about_sixty_lines():
    code = [l for l in REFERENCE.read_text().splitlines()
            if l.strip() and not l.strip().startswith("#")]
    assert len(code) <= 80   # docstrings included


def test_at_least_six_mutants_cover_every_property():
    assert len(MUTANTS) >= 6
    assert {m.property for m in MUTANTS} == {p.name for p in EX.properties}


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_mutant_fails_on_its_property(mutant):
    expected = mutant.property
    # the default count (a window comes in one search in four), unshrunk: shrinking changes
    # the repro, not the verdict (test_repro_script_runs shrinks)
    verdict = runner.grade(EX.only(expected), mutant.source(), mutant.name, shrink=False)
    assert verdict.exit_status == 1, f"{mutant.name} passed {expected}"
    result = verdict.result(expected)
    assert not result.passed and not result.reason.startswith("not checked"), result.reason
    assert "BlockTables(" in result.script


def test_the_full_table_mutants_differ_from_a_passing_solution_by_their_bug():
    """Undo the bug of fork_counts_table_entries: vLLM v0's table shape, fixed, passes."""
    source = mutants.find(EX, "fork_counts_table_entries").source()
    fixed = source.replace("        for block in table:\n",
                           "        for block in set(self._window(table)):\n")
    assert fixed != source
    verdict = runner.grade(EX, fixed, "fixed.py", examples=20)
    assert verdict.passed, [(p.name, p.reason) for p in verdict.properties]


def test_starter_fails_cleanly():
    verdict = runner.grade(EX.only("content-equal"), EX.starter.read_text(), "starter.py",
                           examples=5)
    assert verdict.exit_status == 1 and not verdict.load_error
    assert "start(0, 1) raised NotImplementedError" in verdict.properties[0].reason


def test_same_seed_same_verdict_and_repro():
    source = mutants.find(EX, "release_after_copy").source()
    a, b = (runner.grade(EX.only("copies-minimal"), source, "m.py", seed=7, examples=20)
            for _ in range(2))
    assert [(p.passed, p.reason, p.script) for p in a.properties] == \
           [(p.passed, p.reason, p.script) for p in b.properties]


def test_repro_script_runs(tmp_path):
    mutant = mutants.find(EX, "release_after_copy")
    (tmp_path / "m.py").write_text(mutant.source())
    verdict = runner.grade(EX.only("copies-minimal"), mutant.source(), "m.py", examples=20)
    assert verdict.properties[0].script.count("\n") < 45  # shrunk: a short repro, not a dump
    (tmp_path / "repro.py").write_text(verdict.properties[0].script)
    done = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr


# -- the oracle ------------------------------------------------------------------------
def test_bound_forked_children_of_a_freed_parent():
    """Parent freed after forking k children into a half-full block: k - 1 copies."""
    model = BeamModel(block_size=4, window=None)
    model.start(0, [1, 2])
    for child in (1, 2, 3):
        model.fork(0, child)
    model.free(0)
    assert model.append_all({1: 10, 2: 11, 3: 12}) == 2
    assert model.append_all({1: 13, 2: 14, 3: 15}) == 0      # now each owns its block


def test_bound_counts_a_holder_that_was_not_freed():
    """The release order: the same child pays a copy while its dead parent still holds on."""
    model = BeamModel(block_size=4, window=None)
    model.start(0, [1, 2])
    model.fork(0, 1)
    assert model.append_all({1: 10}) == 1                    # 0 still holds the block
    freed_first = BeamModel(block_size=4, window=None)
    freed_first.start(0, [1, 2])
    freed_first.fork(0, 1)
    freed_first.free(0)
    assert freed_first.append_all({1: 10}) == 0              # the last sharer writes in place


def test_bound_opening_a_block_copies_nothing_but_a_ring_does():
    full = BeamModel(block_size=2, window=None)
    full.start(0, [1, 2])
    full.fork(0, 1)
    assert full.append_all({0: 10, 1: 11}) == 0              # fresh blocks
    ring = BeamModel(block_size=2, window=1)
    ring.start(0, [1, 2])
    ring.fork(0, 1)
    assert ring.append_all({0: 10, 1: 11}) == 1              # both wrap onto the shared block


def test_ring_reads_a_position_just_behind_the_window_from_the_last_block():
    # window of 2 blocks of 2: 5 tokens read positions 1..4; table covers logical blocks 1, 2
    assert list(readable(5, 2, 2)) == [1, 2, 3, 4]
    assert slot_of([7, 9], 5, 1, 2, 2) == (9, 1)              # logical 0 lives in block 2's slot
    assert slot_of([7, 9], 5, 4, 2, 2) == (9, 0)
    assert slot_of([7, 9], 5, 2, 2, 2) == (7, 0)


def test_default_count_benchmark(capsys):
    """Prints the time of one full check at the default example count (the 15 s budget)."""
    verdict = runner.grade(EX, REFERENCE.read_text(), "reference.py")
    with capsys.disabled():
        print(f"\n[benchmark] beam-fork reference, {verdict.examples} examples x "
              f"{len(EX.runs)} run(s) over {len(verdict.properties)} properties: {verdict.seconds:.1f} s")
    assert verdict.passed
