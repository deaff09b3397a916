"""The mutant catalogue: every mutant is a small diff that applies to its reference, carries
exactly one of the four history labels (a link for all but `plausible`), and the CLI writes
it out as a runnable file."""

import subprocess
import sys

import pytest

from graders import mutants, registry
from graders.mutants import LABELS, PatchError, apply, make_diff

EXERCISES = list(registry.all_exercises().values())
CATALOGUE = [(ex, m) for ex in EXERCISES for m in mutants.catalogue(ex)]


@pytest.mark.parametrize("ex, mutant", CATALOGUE, ids=lambda x: getattr(x, "name", ""))
def test_each_mutant_is_a_small_labelled_diff_of_its_reference(ex, mutant):
    assert mutant.label in LABELS
    assert bool(mutant.link) == (mutant.label != "plausible")
    assert mutant.property in {p.name for p in ex.properties}
    # a few lines each; reordering the scheduler's loops is the largest
    assert 1 <= mutant.changed_lines() <= 45, mutant.changed_lines()
    source = mutant.source()
    assert source != ex.reference.read_text()
    compile(source, f"{mutant.name}.py", "exec")


def test_no_full_copies_are_left():
    for ex in EXERCISES:
        assert not list((ex.home / "mutants").glob("*.py")), ex.name


def test_the_applier_is_strict():
    original = "a\nb\nc\n"
    diff = make_diff(original, "a\nB\nc\n", "x.py")
    assert apply(original, diff) == "a\nB\nc\n"
    with pytest.raises(PatchError):
        apply("a\nX\nc\n", diff)


def test_cli_lists_and_writes_a_runnable_mutant(tmp_path):
    listed = subprocess.run([sys.executable, "-m", "graders", "mutant", "block-allocator"],
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "double_free_accepted" in listed.stdout
    assert "issues/1584" in listed.stdout
    out = tmp_path / "m.py"
    done = subprocess.run([sys.executable, "-m", "graders", "mutant", "block-allocator",
                           "double_free_accepted", str(out)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    namespace = {}
    exec(compile(out.read_text(), str(out), "exec"), namespace)
    pool = namespace["BlockAllocator"](2)
    block = pool.allocate()
    pool.free(block)
    pool.free(block)   # the bug: a double free is silently accepted
    missing = subprocess.run([sys.executable, "-m", "graders", "mutant", "block-allocator",
                              "no_such_bug"], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "no mutant" in missing.stderr
