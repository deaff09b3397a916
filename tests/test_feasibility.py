"""Feasibility in one place (issue 25): the KV pool per rank, KV-head replication, and helpers that
refuse a batch the pool cannot hold."""

import pytest

from solutions.capacity import (InfeasibleBatch, feasible_decode, kv_bytes_per_token_per_gpu, kv_capacity,
                                kv_heads_per_gpu, kv_pool_bytes, step_model_capacity, total_memory_bytes)
from solutions.hardware import A100_80GB_SXM, H100_SXM, H200_SXM
from solutions.models import LLAMA_3_1_8B, LLAMA_3_1_405B, LLAMA_3_3_70B
from solutions.step_model import FP8, StepModel
from solutions.units import GiB


def test_kv_heads_split_then_replicate():
    # 8 KV heads: split while tp <= 8, one replicated head per rank beyond
    assert [kv_heads_per_gpu(LLAMA_3_1_405B, tp) for tp in (1, 2, 4, 8, 16, 32)] == [8, 4, 2, 1, 1, 1]
    per_token = LLAMA_3_1_405B.kv_bytes_per_token()
    assert kv_bytes_per_token_per_gpu(LLAMA_3_1_405B, 8) == per_token / 8
    assert kv_bytes_per_token_per_gpu(LLAMA_3_1_405B, 16) == per_token / 8  # not / 16


def test_tp16_405b_holds_half_the_sequences_a_head_split_would():
    cap = kv_capacity(LLAMA_3_1_405B, H100_SXM, 16)
    split = cap.pool_bytes / (LLAMA_3_1_405B.kv_bytes_per_token() / 16)  # the wrong, split-16-ways count
    assert cap.replicated and cap.sequences(2000) == 196  # 183 at the old 0.9 utilisation
    assert kv_capacity(LLAMA_3_1_405B, H100_SXM, 16, gpu_memory_utilization=0.9).sequences(2000) == 183
    assert kv_capacity(LLAMA_3_1_405B, H100_SXM, 8, pp=2).sequences(2000) == 2 * cap.sequences(2000)
    assert split / 2000 == pytest.approx(2 * cap.sequences(2000), rel=0.01)


def test_pool_per_rank_matches_the_vllm_ledger_on_one_gpu():
    cap = kv_capacity(LLAMA_3_1_8B, A100_80GB_SXM)
    assert cap.pool_bytes == kv_pool_bytes(LLAMA_3_1_8B, total_memory_bytes(A100_80GB_SXM))
    assert cap.tokens == int(cap.pool_bytes // LLAMA_3_1_8B.kv_bytes_per_token())


def test_h200_tp8_405b_kv_room_is_binary_gigabytes_of_a_139_8_gib_card():
    cap = kv_capacity(LLAMA_3_1_405B, H200_SXM, 8)
    assert 8 * cap.pool_bytes / 1e9 == pytest.approx(276, abs=2)  # 252 GB at the old 0.9
    assert cap.sequences(2000) == 267
    assert 8 * kv_capacity(LLAMA_3_1_405B, H200_SXM, 8, gpu_memory_utilization=0.9).pool_bytes / 1e9 == pytest.approx(252, abs=2)


def test_an_infeasible_batch_raises_naming_pool_and_batch():
    sm = StepModel.of(LLAMA_3_1_8B, A100_80GB_SXM)
    with pytest.raises(InfeasibleBatch, match=r"64 sequences x 8,100 tokens.*KV pool 55\.\d GiB"):
        feasible_decode(sm, 64, 8100)
    assert feasible_decode(sm, 56, 8100).seconds == sm.decode(56, 8100).seconds


def test_clamp_says_at_most_what_fits():
    cap = step_model_capacity(StepModel.of(LLAMA_3_3_70B, H100_SXM, 4, FP8))
    n = cap.sequences(131_322)
    assert cap.clamp(64, 131_322) == n == 5
    assert cap.holds(n, 131_322) and not cap.holds(n + 1, 131_322)


def test_no_room_for_weights_is_a_clear_error():
    with pytest.raises(ValueError, match="no room for KV"):
        kv_capacity(LLAMA_3_1_405B, H100_SXM, 8)


def test_bad_tp_is_refused():
    with pytest.raises(ValueError, match="tp must be a positive integer"):
        kv_capacity(LLAMA_3_1_8B, H100_SXM, 0)


def test_the_simulators_pool_replicates_kv_heads_past_their_count():
    """The replica's block pool comes from `kv_capacity`: Llama 3.1 405B (8 KV heads) on TP16
    keeps one KV head per rank, so the pool holds half the tokens that splitting the model's KV
    16 ways over the whole replica's memory would promise (what `for_replica` did before)."""
    from solutions.capacity import kv_pool_bytes, total_memory_bytes
    from solutions.serving import KVPool

    pool = KVPool.for_replica(LLAMA_3_1_405B, H200_SXM, tp=16)
    cap = kv_capacity(LLAMA_3_1_405B, H200_SXM, 16)
    assert cap.replicated and pool.num_blocks == cap.tokens // 16
    even_split = kv_pool_bytes(LLAMA_3_1_405B, 16 * total_memory_bytes(H200_SXM), non_kv_bytes=16 * 2 * GiB) \
        / LLAMA_3_1_405B.kv_bytes_per_token()
    assert pool.tokens == pytest.approx(even_split / 2, rel=1e-3)
    # at TP8 (one head per rank, no replication) the two views agree
    even8 = kv_pool_bytes(LLAMA_3_1_405B, 8 * total_memory_bytes(H200_SXM), non_kv_bytes=8 * 2 * GiB) \
        / LLAMA_3_1_405B.kv_bytes_per_token()
    assert KVPool.for_replica(LLAMA_3_1_405B, H200_SXM, tp=8).tokens == pytest.approx(even8, abs=16)
