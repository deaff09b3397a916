"""The decoding answers' kit: the JSON automaton and its masks, the bitmask layout."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solutions.decoding import json_grammar as g
from solutions.decoding.vocab import cl100k, tokenize

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.text(alphabet="abc xyz:,[]{}", max_size=6))
documents = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(alphabet="kv ", max_size=3), inner, max_size=4)),
    max_leaves=12)


def python_accepts(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


@SETTINGS
@given(documents, st.data())
def test_automaton_agrees_with_json_loads(doc, data):
    text = json.dumps(doc, separators=data.draw(st.sampled_from([(",", ":"), (", ", ": ")])))
    assert g.accepts(text)
    cut = data.draw(st.integers(0, len(text) - 1))
    broken = text[:cut] + text[cut + 1:]
    assert g.accepts(broken) == python_accepts(broken), broken


def test_bitmask_layout():
    assert g.bitmask_words(128_256) == 4008 and g.bitmask_bytes(128_256) == 16_032
    mask = np.zeros(70, dtype=bool)
    mask[[0, 33, 69]] = True
    words = g.pack_bitmask(mask)
    assert words.dtype == np.int32 and list(words) == [1, 2, 32]
    rng = np.random.default_rng(0)
    random = rng.random(1000) < 0.5
    assert (g.unpack_bitmask(g.pack_bitmask(random), 1000) == random).all()
    with pytest.raises(ValueError):
        g.bitmask_words(0)


def test_bad_input_is_a_value_error():
    with pytest.raises(ValueError):
        g.advance(g.Context(), "not bytes")
    with pytest.raises(ValueError):
        tokenize(b"bytes")


def test_vectorised_walk_matches_the_scalar_automaton_and_the_cache_matches_the_naive_mask():
    vocab = cl100k()
    rng = np.random.default_rng(1)
    text = '{"k": [1, {"x": "a b"}, -2.5, true], "z": null}'
    ctx = g.Context()
    cache = g.TokenMaskCache(vocab)
    for i, t in enumerate(tokenize(text)):
        assert ctx.alive
        if i % 3:
            ctx = g.advance(ctx, vocab.token_bytes[t])
            continue
        w = g.walk(vocab, ctx)
        for tid in rng.choice(vocab.n_bpe, 150, replace=False):
            assert g.advance(ctx, vocab.token_bytes[tid]).alive == (w.status[tid] == g.LIVE)
        assert (cache.mask(ctx)[0] == g.naive_mask(vocab, ctx)[0]).all()
        ctx = g.advance(ctx, vocab.token_bytes[t])


# ---- n-gram drafting and speculative arithmetic ------------------------------------------------
from solutions.decoding.ngram_draft import longest_match, propose, replay  # noqa: E402
from solutions.decoding.speculative import expected_tokens, expected_tokens_iid, verify_step  # noqa: E402


def test_ngram_matches_vllm_docstring_example():
    # NgramProposer.propose's docstring: [1,2,3,4,2,3], min 2, max 3, k 4 -> [4, 2, 3]
    assert propose([1, 2, 3, 4, 2, 3], 2, 3, 4) == [4, 2, 3]
    assert propose([1, 2, 3], 2, 3, 4) == []
    assert propose([1, 2, 1, 2], 1, 2, 5, max_model_len=5) == [1]


@SETTINGS
@given(st.lists(st.integers(0, 3), min_size=1, max_size=30), st.integers(1, 3), st.integers(0, 2), st.integers(1, 4))
def test_ngram_draft_is_the_longest_earliest_match(tokens, lo, extra, k):
    hi = lo + extra
    n, start = longest_match(tokens, lo, hi)
    suffix = lambda m: tokens[len(tokens) - m:]  # noqa: E731
    occurs = lambda m: [s for s in range(len(tokens) - m) if tokens[s:s + m] == suffix(m)]  # noqa: E731
    longer = [m for m in range(lo, hi + 1) if m < len(tokens) and occurs(m)]
    if not longer:
        assert (n, start) == (0, -1) and propose(tokens, lo, hi, k) == []
    else:
        assert n == max(longer) and start == occurs(n)[0]
        assert propose(tokens, lo, hi, k) == tokens[start + n:start + n + k]


@SETTINGS
@given(st.lists(st.integers(0, 3), min_size=1, max_size=30), st.integers(1, 3), st.integers(0, 2), st.integers(1, 4))
def test_v2_ngram_draft_is_the_longest_rightmost_match_padded_to_k(tokens, lo, extra, k):
    # Model Runner V2's GPU drafter: longest n, then the rightmost earlier start; always k slots,
    # the unmatched ones filled with the last token.
    hi = lo + extra
    n, start = longest_match(tokens, lo, hi, "latest")
    suffix = lambda m: tokens[len(tokens) - m:]  # noqa: E731
    occurs = lambda m: [s for s in range(len(tokens) - m) if tokens[s:s + m] == suffix(m)]  # noqa: E731
    longer = [m for m in range(lo, hi + 1) if m < len(tokens) and occurs(m)]
    draft = propose(tokens, lo, hi, k, occurrence="latest", pad=True)
    assert len(draft) == k
    if not longer:
        assert (n, start) == (0, -1) and draft == [tokens[-1]] * k
    else:
        assert n == max(longer) and start == occurs(n)[-1]
        follow = tokens[start + n:start + n + k]
        assert draft == follow + [tokens[-1]] * (k - len(follow))


def test_v2_padding_is_verified_like_any_draft():
    # a repeated token: the padding is accepted where the output repeats it, as on the GPU
    r = replay([7, 8], [9, 9, 9, 9], 3, 3, 2, occurrence="latest", pad=True)
    assert (r.drafted, r.accepted, r.target_steps, r.draft_steps) == (2, 2, 2, 0)
    assert replay([7, 8], [9, 9, 9, 9], 3, 3, 2).drafted == 0
    with pytest.raises(ValueError):
        longest_match([1, 2], 1, 2, "middle")


@SETTINGS
@given(st.lists(st.integers(0, 3), max_size=15), st.lists(st.integers(0, 3), min_size=1, max_size=30))
def test_replay_is_lossless_and_accounts_every_token(prompt, output):
    r = replay(prompt, output, 1, 2, 3)
    rebuilt = []
    for s in r.steps:
        assert s.position == len(rebuilt) and list(s.draft[:s.accepted]) == output[s.position:s.position + s.accepted]
        rebuilt += output[s.position:s.position + s.emitted]
    assert rebuilt == output and r.target_steps <= len(output)


def test_speculative_arithmetic():
    from solutions.hardware import H100_SXM
    from solutions.models import LLAMA_3_1_8B
    from solutions.step_model import StepModel

    sm = StepModel.of(LLAMA_3_1_8B, H100_SXM)
    assert verify_step(sm, 8, 500, 0).seconds == sm.decode(8, 500).seconds
    times = [verify_step(sm, 64, 500, d).seconds for d in range(6)]
    assert all(a < b for a, b in zip(times, times[1:]))
    assert expected_tokens([0.8] * 4) == pytest.approx(expected_tokens_iid(0.8, 4))
    assert expected_tokens([]) == 1.0 and expected_tokens_iid(1.0, 3) == 4.0
    with pytest.raises(ValueError):
        expected_tokens([1.2])
    with pytest.raises(ValueError):
        propose([1, 2], 0, 2, 3)
    with pytest.raises(ValueError):
        verify_step(sm, 1, 10, -1)


# ---- schema automaton and jump-forward ----------------------------------------------------------
from solutions.decoding.jump_forward import replay as jump_replay  # noqa: E402
from solutions.decoding.schema_automaton import compile_schema, token_masks, token_walk  # noqa: E402
from solutions.decoding.vocab import encoding  # noqa: E402

ITEM = {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"},
                                         "price": {"type": "number"}}}
SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}, "cur": {"enum": ["EUR", "USD"]},
                                           "lines": {"type": "array", "items": ITEM}, "paid": {"type": "boolean"}}}
words = st.text(alphabet="abc XYZ-09", max_size=6)
items = st.builds(lambda sku, qty, price: {"sku": sku, "qty": qty, "price": price}, words, st.integers(-50, 500),
                  st.one_of(st.integers(0, 99), st.sampled_from([0.5, 19.99, 3.25])))
invoices = st.builds(lambda i, cur, lines, paid: {"id": i, "cur": cur, "lines": lines, "paid": paid},
                     words, st.sampled_from(["EUR", "USD"]), st.lists(items, max_size=3), st.booleans())


@SETTINGS
@given(invoices, st.data())
def test_schema_dfa_accepts_exactly_the_schema(doc, data):
    dfa = compile_schema(SCHEMA)
    text = json.dumps(doc)
    assert dfa.accepts(text)
    cut = data.draw(st.integers(0, len(text) - 1))
    broken = text[:cut] + text[cut + 1:]
    if dfa.accepts(broken):  # deleting a character may still give a valid invoice, never invalid JSON
        assert python_accepts(broken) and list(json.loads(broken)) == ["id", "cur", "lines", "paid"]


def test_schema_masks_match_per_state_walks_and_forced_strings():
    vocab = cl100k()
    dfa = compile_schema(SCHEMA)
    masks, steps = token_masks(dfa, vocab)
    for state in (1, 7, dfa.states // 2, dfa.states):
        dest, walked = token_walk(dfa, vocab, state)
        assert walked == steps[state] and ((dest != 0) == masks[state]).all()
    assert dfa.forced(dfa.start) == b'{"id": "'
    with pytest.raises(ValueError):
        compile_schema({"type": "null"})


def test_jump_forward_keeps_the_text_and_off_keeps_the_tokens():
    dfa = compile_schema(SCHEMA)
    text = json.dumps({"id": "A-1", "cur": "USD", "lines": [{"sku": "x", "qty": 2, "price": 0.5}], "paid": True})
    runs = {mode: jump_replay(dfa, text, mode) for mode in ("off", "full", "hold back last piece")}
    assert all(encoding().decode(list(r.tokens)) == text for r in runs.values())
    assert list(runs["off"].tokens) == tokenize(text) and runs["off"].sampled == len(tokenize(text))
    assert runs["full"].sampled <= runs["hold back last piece"].sampled <= runs["off"].sampled
    with pytest.raises(ValueError):
        jump_replay(dfa, text.replace("USD", "JPY"), "full")
    with pytest.raises(ValueError):
        jump_replay(dfa, text, "sideways")


# ---- where the mask runs --------------------------------------------------------------------------
from solutions.decoding.mask_overlap import loop_step, mask_fill_seconds, mask_threads  # noqa: E402


def test_mask_fill_follows_vllms_serial_and_parallel_paths():
    assert mask_fill_seconds(128, 1.0) == 128  # serial up to the threshold
    assert mask_fill_seconds(129, 1.0, cpus=32) == 2 * 16  # 9 chunks of 16 on 8 threads: 2 rounds
    assert mask_fill_seconds(256, 1.0, spec_tokens=4) == 256 * 5  # speculative rows stay serial
    assert mask_threads(1) == 1 and mask_threads(6) == 3 and mask_threads(64) == 8
    with pytest.raises(ValueError):
        mask_fill_seconds(-1, 1.0)


def test_loop_step_hides_the_mask_only_under_the_forward_pass():
    from solutions.hardware import H100_SXM
    from solutions.models import LLAMA_3_1_8B
    from solutions.step_model import StepModel

    sm = StepModel.of(LLAMA_3_1_8B, H100_SXM)
    base = loop_step(sm, 16, 500, 0.0)
    assert base.hidden and base.period_s == pytest.approx(sm.decode(16, 500).seconds)
    slow = loop_step(sm, 16, 500, 2 * base.forward_s / 16)
    assert not slow.hidden and slow.stall_s == pytest.approx(base.forward_s)
    assert loop_step(sm, 16, 500, 0.0, async_scheduling=True).period_s == pytest.approx(base.forward_s)


def test_speculative_rows_stay_serial_and_the_forward_pass_verifies_the_drafts():
    from solutions.hardware import H100_SXM
    from solutions.models import LLAMA_3_1_8B
    from solutions.decoding.speculative import verify_step
    from solutions.step_model import StepModel

    # vLLM keys the serial path on the configured num_speculative_tokens; rows after a rejected draft are free
    assert mask_fill_seconds(256, 1.0, spec_tokens=4, filled_rows=2.5) == 256 * 2.5
    with pytest.raises(ValueError):
        mask_fill_seconds(8, 1.0, spec_tokens=4, filled_rows=6)
    sm = StepModel.of(LLAMA_3_1_8B, H100_SXM)
    spec = loop_step(sm, 64, 1000, 0.0, spec_tokens=4)
    v = verify_step(sm, 64, 1000, 4)
    assert spec.forward_s == pytest.approx(v.seconds - v.overhead_s)
    assert spec.forward_s > loop_step(sm, 64, 1000, 0.0).forward_s
    # async: the mask hides while overhead + mask fits in the forward pass
    edge = (spec.forward_s - spec.cpu_s) / (64 * 5)
    assert loop_step(sm, 64, 1000, 0.999 * edge, spec_tokens=4, async_scheduling=True).hidden
    assert not loop_step(sm, 64, 1000, 1.001 * edge, spec_tokens=4, async_scheduling=True).hidden


def test_draft_costs_and_cumulative_rates():
    from solutions.hardware import H100_SXM
    from solutions.models import LLAMA_3_2_1B, LLAMA_3_3_70B
    from solutions.decoding.speculative import chain_draft_s, conditional_from_cumulative, medusa_heads_s
    from solutions.step_model import StepModel

    assert conditional_from_cumulative([0.8, 0.4, 0.2]) == pytest.approx([0.8, 0.5, 0.5])
    with pytest.raises(ValueError):
        conditional_from_cumulative([0.4, 0.8])  # cumulative rates cannot grow with depth
    target = StepModel.of(LLAMA_3_3_70B, H100_SXM, tp=4)
    heads = medusa_heads_s(target, 1, 4)
    assert heads == pytest.approx(4 * target.lm_head_s(1) * (1 + 8192 / 128256))
    assert 0 < heads < target.decode(1, 1000).seconds / 10  # a few percent of a step
    draft = StepModel.of(LLAMA_3_2_1B, H100_SXM, overhead_s=0.0)
    assert chain_draft_s(draft, 8, 1000, 4) == pytest.approx(4 * draft.decode(8, 1000).seconds)
    assert chain_draft_s(draft, 8, 1000, 0) == 0.0
