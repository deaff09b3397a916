"""The reference passes; every mutant fails, and the property it names is the one it breaks."""

import subprocess
import sys

import pytest

from graders import registry, runner
from graders import mutants
from tests.graders.conftest import REFERENCE

EX = registry.get("block-allocator")
MUTANTS = mutants.catalogue(EX)


def test_reference_passes_every_property():
    verdict = runner.grade(EX, REFERENCE.read_text(), "reference.py", examples=30)
    assert verdict.passed, [(p.name, p.reason) for p in verdict.properties]
    assert verdict.exit_status == 0 and verdict.score == 1.0


def test_reference_is_about_forty_lines():
    code = [l for l in REFERENCE.read_text().splitlines()
            if l.strip() and not l.strip().startswith("#")]
    assert len(code) <= 50


def test_at_least_eight_mutants_cover_every_property():
    assert len(MUTANTS) >= 8
    named = {m.property for m in MUTANTS}
    assert named == {p.name for p in EX.properties}


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_mutant_fails_on_its_property(mutant):
    source = mutant.source()
    expected = mutant.property
    verdict = runner.grade(EX.only(expected), source, mutant.name, examples=20, shrink=False)
    failed = {p.name: p for p in verdict.properties if not p.passed}
    assert verdict.exit_status == 1
    assert expected in failed, f"{mutant.name} should fail {expected}, failed {list(failed)}"
    assert "BlockAllocator(" in failed[expected].script


def test_same_seed_same_verdict_and_repro():
    source = mutants.find(EX, "cow_copy_reversed").source()
    a = runner.grade(EX.only("copy-on-write"), source, "m.py", seed=7, examples=20)
    b = runner.grade(EX.only("copy-on-write"), source, "m.py", seed=7, examples=20)
    assert [(p.passed, p.reason, p.script) for p in a.properties] == \
           [(p.passed, p.reason, p.script) for p in b.properties]


def test_repro_script_runs_and_shows_the_bug(tmp_path):
    mutant = mutants.find(EX, "cow_copy_reversed")
    (tmp_path / "m.py").write_text(mutant.source())
    verdict = runner.grade(EX, mutant.source(), "m.py", examples=20)
    script = next(p.script for p in verdict.properties if p.name == "copy-on-write")
    assert script.count("\n") < 45  # shrunk: a short repro, not a dump
    (tmp_path / "repro.py").write_text(script)
    done = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_default_count_benchmark(capsys):
    """Prints the time of one full check at the default example count (the 15 s budget)."""
    verdict = runner.grade(EX, REFERENCE.read_text(), "reference.py")
    with capsys.disabled():
        print(f"\n[benchmark] block-allocator reference, {verdict.examples} examples x "
              f"{len(EX.runs)} run(s) over {len(verdict.properties)} properties: {verdict.seconds:.1f} s")
    assert verdict.passed


def test_a_pool_that_hands_out_any_free_block_passes():
    """Block ids are the candidate's choice: the machine picks live blocks by hand-out order,
    so a pool that hands out an arbitrary free block (different in every run) is driven
    through the same calls on replay and passes."""
    source = REFERENCE.read_text()
    old = "block = self.free_blocks.popleft()"
    assert source.count(old) == 1
    source = source.replace(old, "block = self.free_blocks[hash(object()) % len(self.free_blocks)]"
                                 "\n        self.free_blocks.remove(block)")
    verdict = runner.grade(EX, source, "any_free_block.py", examples=30)
    assert verdict.passed, [(p.name, p.reason) for p in verdict.properties if not p.passed]
