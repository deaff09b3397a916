"""The prefix-caching kit: chat traces keep the shape a prefix cache feeds on, and the
eviction-order simulator agrees with the q47 reference and keeps (or breaks) the chain
invariant as its order says."""

import pytest

from solutions.serving.chat_trace import ChatTraceSpec, chat_trace
from solutions.prefix_caching.eviction_order import (
    FULL_SCALE_OPEN_CONVERSATIONS, FULL_SCALE_POOL_BLOCKS, FULL_SCALE_STEADY, ORDERS, ChainPool, steady_replay,
)
from solutions.exercises.hash_prefix_cache import PrefixCache

SMALL = ChatTraceSpec(conversations=40, concurrency=8, system_tokens=64, system_prompts=2, seed=3)


def test_a_trace_is_a_function_of_its_spec():
    assert chat_trace(SMALL) == chat_trace(SMALL)
    assert chat_trace(SMALL) != chat_trace(ChatTraceSpec(**{**SMALL.__dict__, "seed": 4}))


def test_each_turn_carries_the_whole_conversation_so_far():
    trace = chat_trace(SMALL)
    last = {}
    for turn in trace:
        if turn.conversation in last:
            before = last[turn.conversation]
            assert turn.turn == before.turn + 1
            assert turn.prompt[:len(before.prompt) + len(before.answer)] == before.prompt + before.answer
        else:
            assert turn.turn == 0
        last[turn.conversation] = turn
    assert len(last) == SMALL.conversations


@pytest.mark.parametrize("field,value", [("conversations", 0), ("concurrency", -1),
                                         ("system_tokens", 1.5), ("mean_turns", 0.5)])
def test_bad_specs_are_refused_by_name(field, value):
    with pytest.raises(ValueError, match=field):
        ChatTraceSpec(**{**SMALL.__dict__, field: value})


def test_tail_first_replays_like_the_q47_reference():
    reference = PrefixCache(num_blocks=400, block_size=16, hash_space=2**64)
    pool = ChainPool(num_blocks=400, block_size=16, order="tail-first")
    for i, r in enumerate(chat_trace(SMALL)):
        expected = len(reference.lookup(r.prompt, [])) * 16
        reference.allocate(i, r.prompt + r.answer, [])
        reference.free(i)
        assert pool.serve(r.prompt, r.answer) == expected
        assert pool.stranded_blocks() == 0


def test_head_first_strands_the_tail_of_an_evicted_head():
    pool = ChainPool(num_blocks=5, block_size=16, order="head-first")
    pool.serve(tuple(range(64)), (7,))
    pool.serve(tuple(range(1000, 1032)), (7,))
    assert pool.stranded_blocks() == 2
    assert pool.serve(tuple(range(64)), (7,)) == 0


def test_random_order_strands_under_pressure_and_a_request_too_big_is_refused():
    pool = ChainPool(num_blocks=400, block_size=16, order="random", seed=1)
    peak = 0
    for r in chat_trace(SMALL):
        pool.serve(r.prompt, r.answer)
        peak = max(peak, pool.stranded_blocks())
    assert peak > 0
    with pytest.raises(ValueError, match="cannot hold"):
        ChainPool(num_blocks=2, block_size=16).serve(tuple(range(64)), ())
    with pytest.raises(ValueError, match="order"):
        ChainPool(num_blocks=2, block_size=16, order="lifo")


def test_a_half_scale_replay_with_the_working_set_ratio_kept_agrees_with_the_recorded_full_scale_one():
    # q05 quotes FULL_SCALE_STEADY (a 28,614-block pool, 64 open conversations) and replays a
    # smaller pool with the open working set's ratio to it kept; the shares must carry across scales.
    trace = chat_trace(ChatTraceSpec(conversations=800, concurrency=FULL_SCALE_OPEN_CONVERSATIONS // 2, seed=1))
    half = {order: steady_replay(trace, FULL_SCALE_POOL_BLOCKS // 2, 16, order) for order in ORDERS}
    hit, share, _ = FULL_SCALE_STEADY["random"]
    assert half["random"].stranded_share == pytest.approx(share, abs=0.04)
    assert half["random"].hit_rate == pytest.approx(hit, abs=0.04)
    assert half["tail-first"].stranded_blocks == 0 == FULL_SCALE_STEADY["tail-first"][2]
    chain_blocks = sum(len(r.prompt) + len(r.answer) for r in trace) / len(trace) / 16
    assert 0 < half["head-first"].stranded_blocks < chain_blocks        # a sliver, under one chain
    assert half["head-first"].hit_rate == pytest.approx(half["tail-first"].hit_rate, abs=0.005)
    assert half["tail-first"].hit_rate == pytest.approx(FULL_SCALE_STEADY["tail-first"][0], abs=0.01)


def test_a_steady_read_refuses_a_trace_that_never_fills_the_pool():
    with pytest.raises(ValueError, match="never fills"):
        steady_replay(chat_trace(SMALL), 100_000, 16, "random")


def test_prefix_boundary_counts_whole_blocks_before_the_first_difference():
    from solutions.prefix_caching.prefix_check import prefix_boundary
    a = list(range(100))
    b = a[:37] + [-1] + a[38:]
    boundary = prefix_boundary(a, b, block_size=16)
    assert (boundary.first_difference, boundary.reusable_blocks, boundary.lost_to_partial_block) == (37, 2, 5)
    same = prefix_boundary(a, a[:50])
    assert same.first_difference is None and same.reusable_tokens == 48
    with pytest.raises(ValueError, match="block_size"):
        prefix_boundary(a, b, block_size=0)


def test_merge_at_join_finds_a_tokenizer_that_merges_across_the_join():
    from solutions.prefix_caching.prefix_check import merge_at_join

    def pairs(text):      # a toy tokenizer that merges "ab" into one id
        out, i = [], 0
        while i < len(text):
            if text[i:i + 2] == "ab":
                out.append(1000); i += 2
            else:
                out.append(ord(text[i])); i += 1
        return out

    assert merge_at_join(pairs, "xxa", "bxx").first_difference == 2
    assert merge_at_join(pairs, "xxa", "cxx").first_difference is None
