"""Feasibility in one place (issue 25): the KV pool per rank, KV-head replication, and helpers that
refuse a batch the pool cannot hold."""

import ast
import types
from pathlib import Path

import pytest

from solutions.capacity import (InfeasibleBatch, feasible_decode, kv_bytes_per_token_per_gpu, kv_capacity,
                                kv_heads_per_gpu, kv_pool_bytes, stage_layers, step_model_capacity,
                                total_memory_bytes)
from solutions.hardware import A100_80GB_SXM, H100_SXM, H200_SXM
from solutions.models import LLAMA_3_1_8B, LLAMA_3_1_405B, LLAMA_3_3_70B
from solutions.step_model import FP8, StepModel
from solutions.units import GiB

ROOT = Path(__file__).resolve().parents[1]


def test_kv_heads_split_then_replicate():
    # 8 KV heads: split while tp <= 8, one replicated head per rank beyond
    assert [kv_heads_per_gpu(LLAMA_3_1_405B, tp) for tp in (1, 2, 4, 8, 16, 32)] == [8, 4, 2, 1, 1, 1]
    per_token = LLAMA_3_1_405B.kv_bytes_per_token()
    assert kv_bytes_per_token_per_gpu(LLAMA_3_1_405B, 8) == per_token / 8
    assert kv_bytes_per_token_per_gpu(LLAMA_3_1_405B, 16) == per_token / 8  # not / 16


def test_tp16_405b_holds_half_the_sequences_a_head_split_would():
    cap = kv_capacity(LLAMA_3_1_405B, H100_SXM, 16)
    split = cap.pool_bytes / (LLAMA_3_1_405B.kv_bytes_per_token() / 16)  # the wrong, split-16-ways count
    assert cap.replicated and cap.sequences(2000) == 192  # 179 at the old 0.9 utilisation
    assert kv_capacity(LLAMA_3_1_405B, H100_SXM, 16, gpu_memory_utilization=0.9).sequences(2000) == 179
    # TP8 x PP2 holds a little over twice: it replicates neither KV heads nor their projections
    assert kv_capacity(LLAMA_3_1_405B, H100_SXM, 8, pp=2).sequences(2000) == 392
    assert split / 2000 == pytest.approx(2 * cap.sequences(2000), rel=0.01)


def _rank_weights(cap) -> float:
    """The weights one rank holds, read back from its pool: total x utilisation - non-KV - pool."""
    return total_memory_bytes(cap.gpu) * cap.gpu_memory_utilization - cap.non_kv_bytes - cap.pool_bytes


def test_past_the_kv_head_count_a_rank_also_holds_its_heads_k_and_v_projections():
    """vLLM's QKVParallelLinear gives a rank one KV head, replicated tp / KV-heads times, and the
    k_proj / v_proj rows that compute it: at TP16 each rank holds 1/8 of them, not 1/16."""
    m = LLAMA_3_1_405B
    kv_proj = m.n_attention * 2 * m.num_kv_heads * m.head_dim * m.hidden_size * 2  # bytes, BF16, all layers
    tp16 = kv_capacity(m, H100_SXM, 16)
    assert _rank_weights(tp16) - m.weight_bytes() / 16 == pytest.approx(kv_proj * (1 / 8 - 1 / 16), rel=1e-6)
    assert kv_proj * (1 / 8 - 1 / 16) / 1e9 == pytest.approx(0.53, abs=0.01)
    assert tp16.tokens == 384_575  # 392,767 when a rank held 1/16 of the projections
    # up to the KV-head count the split is plain 1/tp, as before: the same tokens as total x 0.92 - W/tp - non-KV
    for model, gpu, tps in ((LLAMA_3_1_8B, H100_SXM, (1, 2, 4, 8)), (LLAMA_3_3_70B, H100_SXM, (2, 4, 8)),
                            (m, H200_SXM, (8,))):
        for tp in tps:
            cap = kv_capacity(model, gpu, tp)
            old = (total_memory_bytes(gpu) * 0.92 - model.weight_bytes() / tp - 2 * GiB) / kv_bytes_per_token_per_gpu(model, tp)
            assert _rank_weights(cap) == pytest.approx(model.weight_bytes() / tp, rel=1e-12)
            assert cap.tokens == int(old), (model.name, tp)


def test_pipeline_stages_are_split_the_way_vllm_splits_them():
    """`get_pp_indices`: the remainder goes to the stages before the last, counting back, so the
    first (embedding) and last (LM head) stages keep the short share."""
    assert stage_layers(126, 8) == [15, 16, 16, 16, 16, 16, 16, 15]
    assert stage_layers(126, 4) == [31, 32, 32, 31]
    assert stage_layers(80, 3) == [27, 27, 26]  # remainder pp - 1: the first stage takes one too
    assert stage_layers(126, 2) == [63, 63] and stage_layers(7, 1) == [7]
    with pytest.raises(ValueError, match="pp must be an integer"):
        stage_layers(126, 0)


VLLM_UTILS = ROOT / ".cache" / "engines" / "vllm-0.33.0" / "vllm" / "distributed" / "utils.py"


@pytest.mark.skipif(not VLLM_UTILS.is_file(), reason="vLLM 0.33.0 not unpacked (python scripts/fetch_engines.py)")
def test_stage_layers_agree_with_vllms_own_get_pp_indices():
    """Run the pinned release's `get_pp_indices` itself (VLLM_PP_LAYER_PARTITION unset) on a grid."""
    tree = ast.parse(VLLM_UTILS.read_text(encoding="utf-8"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_pp_indices")
    scope = {"envs": types.SimpleNamespace(VLLM_PP_LAYER_PARTITION=None),
             "logger": types.SimpleNamespace(info=lambda *a: None)}
    exec(compile(ast.Module([fn], []), str(VLLM_UTILS), "exec"), scope)
    for layers in (7, 16, 32, 61, 80, 126):
        for pp in range(1, min(layers, 12) + 1):
            ends = [scope["get_pp_indices"](layers, r, pp) for r in range(pp)]
            assert stage_layers(layers, pp) == [b - a for a, b in ends], (layers, pp)


def test_the_binding_pipeline_stage_carries_the_fewest_tokens():
    """405B FP8 on PP8: the first and last stages hold 15 layers plus the BF16 embedding / LM head,
    the middle ones 16 layers; a middle stage binds (382.5K tokens), every rank gets its pool."""
    cap = kv_capacity(LLAMA_3_1_405B, H100_SXM, 1, weight_dtype="fp8", pp=8)
    first, *middle, last = cap.stage_tokens
    assert cap.stage == 1 and cap.tokens == min(cap.stage_tokens) == middle[0]
    assert len(set(middle)) == 1 and first == last > cap.tokens
    assert cap.tokens == pytest.approx(382_500, rel=1e-3)  # 366.2K when 16/126 of every weight sat on each stage
    assert cap.sequences(2000) == 191
    assert "stage 2 of 8 binds" in cap.describe()


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
    keeps one KV head per rank (and its K/V projections), so the pool holds half the tokens that
    splitting the model's KV 16 ways over the whole replica's memory would promise (what
    `for_replica` did before)."""
    from solutions.capacity import kv_pool_bytes, total_memory_bytes
    from solutions.serving import KVPool

    pool = KVPool.for_replica(LLAMA_3_1_405B, H200_SXM, tp=16)
    cap = kv_capacity(LLAMA_3_1_405B, H200_SXM, 16)
    assert cap.replicated and pool.num_blocks == cap.tokens // 16
    m = LLAMA_3_1_405B
    replicated_kv_proj = 16 * m.n_attention * 2 * m.num_kv_heads * m.head_dim * m.hidden_size * 2 * (1 / 8 - 1 / 16)
    even_split = (kv_pool_bytes(m, 16 * total_memory_bytes(H200_SXM), non_kv_bytes=16 * 2 * GiB)
                  - replicated_kv_proj) / m.kv_bytes_per_token()
    assert pool.tokens == pytest.approx(even_split / 2, rel=1e-3)
    # at TP8 (one head per rank, no replication) the two views agree
    even8 = kv_pool_bytes(LLAMA_3_1_405B, 8 * total_memory_bytes(H200_SXM), non_kv_bytes=8 * 2 * GiB) \
        / LLAMA_3_1_405B.kv_bytes_per_token()
    assert KVPool.for_replica(LLAMA_3_1_405B, H200_SXM, tp=8).tokens == pytest.approx(even8, abs=16)
