"""The decoding answers' kit: the JSON automaton and its masks, the bitmask layout."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solutions import json_grammar as g
from solutions.vocab import cl100k, tokenize

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
