"""hash-prefix-cache (q47): the reference passes; every mutant fails on the property it names;
the vLLM-style cache fails only the property vLLM skips by design; keys are compared only for
identity, so other hash designs pass."""

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from graders import registry, runner
from graders import mutants
from graders.exercises.hash_prefix_cache import COLLISIONS, DUPLICATES, EVICTION, WIDE

EX = registry.get("hash-prefix-cache")
MUTANTS = mutants.catalogue(EX)
REFERENCE = EX.reference


def engine_fails_exactly(source, expected):
    """Each expected property fails at the default count; every other one passes."""
    failing = runner.grade(EX.only(*expected), source, "engine.py", shrink=False)
    assert [p.name for p in failing.properties if p.passed] == []
    passing = runner.grade(EX.all_but(*expected), source, "engine.py", examples=20)
    assert [p.name for p in passing.properties if not p.passed] == []


def test_reference_passes_every_property_at_the_default_count(capsys):
    """Also prints the time of one full check at the default count (the 15 s budget)."""
    verdict = runner.grade(EX, REFERENCE.read_text(), "reference.py")
    with capsys.disabled():
        print(f"\n[benchmark] hash-prefix-cache reference, {verdict.examples} examples x "
              f"{len(EX.runs)} run(s) over {len(verdict.properties)} properties: {verdict.seconds:.1f} s")
    assert verdict.passed, [(p.name, p.reason) for p in verdict.properties]
    assert verdict.exit_status == 0 and verdict.score == 1.0


def test_reference_is_about_seventy_lines():
    code = [l for l in REFERENCE.read_text().splitlines()
            if l.strip() and not l.strip().startswith("#")]
    assert len(code) <= 90


def test_at_least_eight_mutants_cover_every_property():
    assert len(MUTANTS) >= 8
    assert {m.property for m in MUTANTS} == {p.name for p in EX.properties}


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_mutant_fails_on_its_property(mutant):
    """At the default count, unshrunk: shrinking changes the repro, not the verdict (the
    repro tests below shrink)."""
    expected = mutant.property
    verdict = runner.grade(EX.only(expected), mutant.source(), mutant.name, shrink=False)
    result = verdict.result(expected)
    assert verdict.exit_status == 1
    assert not result.passed, f"{mutant.name} should fail {expected}"
    assert not result.reason.startswith(("not checked", "sandbox", "the submission's"))
    assert "PrefixCache(" in result.script


def test_vllm_style_cache_fails_only_collisions():
    """The issue's claim: an engine that trusts its hash passes everything else."""
    engine_fails_exactly(mutants.find(EX, "trusts_hash_like_vllm").source(),
                         [COLLISIONS])


def design(old: str, new: str) -> str:
    """The reference with one design choice changed (the edit must apply exactly once)."""
    source = REFERENCE.read_text()
    assert source.count(old) == 1, old
    return source.replace(old, new)


KEY = "key = hash((key, own, extra)) % self.hash_space"
SALT_IN_FIRST_BLOCK = design(
    KEY, "key = hash((key, own, extra if end == size else ())) % self.hash_space")
FNV_KEYS = design(   # a 64-bit FNV-1a of the block's repr: not Python's hash at all
    KEY, "key = __import__('functools').reduce(lambda h, c: ((h ^ c) * 1099511628211) % 2**64, "
    "repr((key, own, extra)).encode(), 14695981039346656037) % self.hash_space")


@pytest.mark.parametrize("source", [SALT_IN_FIRST_BLOCK, FNV_KEYS], ids=["salt-first-block", "fnv"])
def test_keys_are_compared_only_for_identity(source):
    """vLLM folds the cache salt into the first block only (the chain carries it on), and a
    key may come from any function: both designs pass every property."""
    verdict = runner.grade(EX, source, "design.py", examples=25)
    assert verdict.passed, [(p.name, p.reason) for p in verdict.properties if not p.passed]


def test_a_key_shared_by_different_prefixes_fails_chaining():
    """Keys compared for identity still catch a hash that drops the parent, even when every
    hit is verified against the prefix (so no wrong KV is ever served)."""
    source = design(KEY, "key = hash((ROOT, own, extra)) % self.hash_space")
    verdict = runner.grade(EX.only("chaining"), source, "no_parent.py", examples=40)
    assert not verdict.passed and "different key" in verdict.properties[0].reason


def test_two_prompts_share_block_3_only_with_blocks_0_to_2():
    """The q47 brief, on the reference: equal tokens in block 3 are not enough."""
    cache = runpy.run_path(str(REFERENCE))["PrefixCache"](16, 16, WIDE)
    head_a, head_b, block3 = list(range(48)), list(range(100, 148)), list(range(500, 516))
    cache.allocate(0, head_a + block3, [])
    cache.free(0)
    assert cache.allocate(1, head_b + block3 + [1], [])[1] == 0
    assert cache.allocate(2, head_a + block3 + [1], [])[1] == 64
    assert cache.allocate(3, head_a + block3 + [1], [9])[1] == 0  # another adapter


def test_reference_stores_each_block_of_a_prompt_once():
    """The parent-link design: a block keeps its own tokens and a link to its parent's
    record, so a long prompt costs memory linear in its length (a whole-prefix store would
    keep B * n(n+1)/2 token ids), and a repeat shares the records instead of copying them."""
    blocks, size = 64, 4
    cache = runpy.run_path(str(REFERENCE))["PrefixCache"](2 * blocks + 2, size, WIDE)
    prompt = list(range(blocks * size)) + [-5]
    cache.allocate(0, prompt, [])
    cache.allocate(1, prompt[:-1], [])       # all but the last block hit; that one is a copy
    records, seen = [], set()
    for held in cache.prefixes:
        while held is not None and id(held) not in seen:
            seen.add(id(held))
            records.append(held)
            held = held.parent
    assert len(records) == blocks
    assert sum(len(r.tokens) for r in records) == blocks * size
    last = cache.tables[1][-1]
    assert cache.prefixes[last] is cache.prefixes[cache.tables[0][blocks - 1]]


def test_same_seed_same_verdict_and_repro():
    source = mutants.find(EX, "revived_block_loses_hash").source()
    a = runner.grade(EX.only("revival"), source, "m.py", seed=3, examples=20)
    b = runner.grade(EX.only("revival"), source, "m.py", seed=3, examples=20)
    assert [(p.passed, p.reason, p.script) for p in a.properties] == \
           [(p.passed, p.reason, p.script) for p in b.properties]


def test_repro_script_runs_and_shows_the_bug(tmp_path):
    mutant = mutants.find(EX, "revived_block_loses_hash")
    (tmp_path / "m.py").write_text(mutant.source())
    verdict = runner.grade(EX.only("revival"), mutant.source(), "m.py", examples=20)
    script = verdict.result("revival").script
    assert script.count("\n") < 45  # shrunk: a short repro, not a dump
    (tmp_path / "repro.py").write_text(script)
    done = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_nano_vllm_style_cache_fails_what_the_spec_says():
    """nano-vllm's BlockManager behind this interface: own-token check, one block per hash,
    one FIFO free list. The spec names exactly the three properties that costs it."""
    engine_fails_exactly((Path(__file__).parent / "prefix_cache_nano_vllm_style.py").read_text(),
                         [COLLISIONS, DUPLICATES, EVICTION])


def test_under_this_interface_the_generation_never_decides_a_hit():
    """q47's page: a child is always evicted before the parent copy it links to (a held child
    means a held parent, a request frees tail first, free blocks are reused least recently freed
    first), so the block-link design passes every property with its generation never bumped.
    The counter guards eviction by block id (vLLM's BlockPool.evict_blocks), which this
    interface does not have."""
    source = (Path(__file__).parent / "prefix_cache_block_link_style.py").read_text()
    bump = "        self.generation[block] += 1  # its memory is reused: old links to it stop vouching\n"
    assert source.count(bump) == 1
    assert runner.grade(EX, source.replace(bump, ""), "block_link_no_generation.py").passed


def test_a_parent_link_to_a_physical_block_needs_one_pick_of_the_copies():
    """q47's page: a link to a physical parent block with its generation is as safe as the
    reference's shared record and passes every property, but only because every request picks
    the same copy of a duplicated parent; picking the newest copy loses hits (the reference,
    whose copies share one record, passes with either pick)."""
    source = (Path(__file__).parent / "prefix_cache_block_link_style.py").read_text()
    assert runner.grade(EX, source, "block_link.py", examples=25).passed
    newest = source.replace("PICK_LAST = False", "PICK_LAST = True")
    assert not runner.grade(EX, newest, "block_link_newest.py", examples=25).passed
    either = design("for block in self.cached.get(key, ()):",
                    "for block in reversed(self.cached.get(key, ())):")
    assert runner.grade(EX, either, "reference_newest.py", examples=25).passed
