"""prefix-trie: the reference passes; every mutant fails on the property it names; the model
follows SGLang's stamp order; a repro script replays."""

import subprocess
import sys

import pytest

from graders import registry, runner
from graders import mutants
from graders.exercises.prefix_trie.model import TrieModel
from solutions.exercises.prefix_trie import RadixCache

EX = registry.get("prefix-trie")
REFERENCE = EX.reference
MUTANTS = mutants.catalogue(EX)


def test_reference_passes_every_property():
    verdict = runner.grade(EX, REFERENCE.read_text(), "reference.py", examples=30)
    assert verdict.passed, [(p.name, p.reason) for p in verdict.properties]
    assert verdict.exit_status == 0 and verdict.score == 1.0


def test_reference_is_about_a_hundred_lines():
    code = [l for l in REFERENCE.read_text().splitlines()
            if l.strip() and not l.strip().startswith("#")]
    assert len(code) <= 110


def test_at_least_eight_mutants_cover_every_property():
    assert len(MUTANTS) >= 8
    assert {m.property for m in MUTANTS} == {p.name for p in EX.properties}


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_mutant_fails_on_its_property(mutant):
    """Whether a property fails is decided by the first failing example; shrinking it to a
    short repro is most of a failing grade's time, so this test skips it (the repro tests
    below keep it)."""
    expected = mutant.property
    verdict = runner.grade(EX.only(expected), mutant.source(), mutant.name, examples=20,
                           shrink=False)
    assert verdict.exit_status == 1
    result = verdict.result(expected)
    assert not result.passed and not result.reason.startswith("not checked"), result.reason
    assert "RadixCache(" in result.script


def test_same_seed_same_verdict_and_repro():
    source = mutants.find(EX, "evict_newest_first").source()
    a = runner.grade(EX.only("lru-order"), source, "m.py", seed=7, examples=20)
    b = runner.grade(EX.only("lru-order"), source, "m.py", seed=7, examples=20)
    assert [(p.passed, p.reason, p.script) for p in a.properties] == \
           [(p.passed, p.reason, p.script) for p in b.properties]


def test_repro_script_is_short_and_runs(tmp_path):
    mutant = mutants.find(EX, "match_without_split")
    (tmp_path / "m.py").write_text(mutant.source())
    verdict = runner.grade(EX.only("split"), mutant.source(), "m.py", examples=20)
    script = verdict.result("split").script
    assert not verdict.passed and script.count("\n") < 45
    (tmp_path / "repro.py").write_text(script)
    done = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_split_lower_half_is_refreshed_as_in_sglang():
    """SGLang stamps the node whose edge a match ends inside before splitting it, so the
    unmatched suffix counts as used; the reference and the grader's model agree on that."""
    model, cache = TrieModel(), RadixCache()
    for tokens, slots in (((1, 2, 3), [10, 11, 12]), ((5,), [20])):
        model.insert(tokens, slots)
        cache.insert(list(tokens), slots)
    model.match((1, 2))
    cache.match_prefix([1, 2])
    assert model.evict(1)[0] == cache.evict(1) == [20]       # [5] is now the oldest leaf
    assert model.evict(1)[0] == cache.evict(1) == [12]       # then the suffix [3]
    assert model.evict(9)[0] == cache.evict(9) == [10, 11]   # its parent became a leaf


def _load(source):
    namespace = {}
    exec(compile(source, "m.py", "exec"), namespace)
    return namespace["RadixCache"]


PARENT_OUT_OF_TURN = ("evict_cascades_parent", "parent_pushed_with_child_stamp")


@pytest.mark.parametrize("name", PARENT_OUT_OF_TURN)
def test_a_parent_refreshed_by_an_exact_match_waits_its_turn(name):
    """Five calls from review t5: a match that ends exactly at an inner node ([0]) stamps it and
    not its child ([1]), so once the child goes, the older leaf [2] goes before [0]."""
    model, ref, bug = TrieModel(), RadixCache(), _load(mutants.find(EX, name).source())()
    for tokens, slots in (((0, 1), [0, 1]), ((0,), [9]), ((2,), [2])):
        model.insert(tokens, slots)
        ref.insert(list(tokens), slots)
        bug.insert(list(tokens), slots)
    model.match((0,))
    ref.match_prefix([0])
    bug.match_prefix([0])
    assert model.evict(2)[0] == ref.evict(2) == [1, 2]
    assert bug.evict(2) == [1, 0]


@pytest.mark.parametrize("name", PARENT_OUT_OF_TURN)
def test_a_plain_check_catches_a_parent_freed_out_of_turn(name):
    """Both passed a plain check at seed 0 before the rule refresh_inner_then_evict (caught on
    4 of seeds 0-9); a plain check at the default count and seed must fail them on lru-order."""
    verdict = runner.grade(EX, mutants.find(EX, name).source(), f"{name}.py", shrink=False,
                           stop_at_first_failure=True)
    assert verdict.failed == ["lru-order"], verdict.failed


def test_lock_covers_exactly_the_match():
    cache = RadixCache()
    cache.insert([1, 2, 3, 4], [0, 1, 2, 3])
    slots, node = cache.match_prefix([1, 2, 9])
    cache.lock(node)
    assert slots == [0, 1] and cache.protected_size() == 2 and cache.evictable_size() == 2
    assert cache.evict(10) == [2, 3]            # the unmatched suffix goes; the match stays
    cache.unlock(node)
    with pytest.raises(ValueError, match="not locked"):
        cache.unlock(node)                      # a second unlock would go below zero


def test_default_count_benchmark(capsys):
    """Prints the time of one full check at the default example count (the 15 s budget)."""
    verdict = runner.grade(EX, REFERENCE.read_text(), "reference.py")
    with capsys.disabled():
        print(f"\n[benchmark] prefix-trie reference, {verdict.examples} examples x "
              f"{len(EX.runs)} run(s) over {len(verdict.properties)} properties: {verdict.seconds:.1f} s")
    assert verdict.passed


def test_handles_from_id_of_the_node_pass():
    """Handles are ints of the candidate's choosing: id(node) differs in every run, and the
    machine draws handles by the order it met their nodes, never by value, so it passes."""
    source = REFERENCE.read_text()
    old = "self.id, self.parent, self.tokens, self.slots = node_id, parent, tokens, slots"
    assert source.count(old) == 1
    source = source.replace(old, old.replace("= node_id,", "= id(self),"))
    verdict = runner.grade(EX, source, "id_handles.py", examples=30)
    assert verdict.passed, [(p.name, p.reason) for p in verdict.properties if not p.passed]
