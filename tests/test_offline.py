"""Offline pricing: the numbers q12 and q35 rest on."""

import pytest

from solutions.hardware import A100_80GB_SXM
from solutions.models import LLAMA_3_1_8B, LLAMA_3_3_70B
from solutions.roofline_capacity.offline import OfflinePass
from solutions.step_model import StepModel


def test_summarisation_pass_is_three_quarters_prefill():
    p = OfflinePass(LLAMA_3_1_8B, shared_prefix=300, unique=1700, output=200)
    # KV-bound, under max_num_seqs 256: (0.92 x 79.15 GiB - 14.96 GiB weights - 2 GiB) / (2,100 x 128 KiB) = 217.9
    assert p.batch() == 217
    assert p.prefill_gpu_s() / p.gpu_s() == pytest.approx(0.741, abs=0.005)


def test_tp_prices_every_gpu_and_pools_their_memory():
    p = OfflinePass(LLAMA_3_3_70B, shared_prefix=500, unique=1100, output=100, tp=4)
    assert p.kv_pool_bytes() > 4 * 30e9
    one_gpu_prefill = StepModel.of(LLAMA_3_3_70B, A100_80GB_SXM, tp=4).prefill(1600, 5).seconds / 5
    assert p.prefill_gpu_s() == pytest.approx(4 * one_gpu_prefill)


def test_a_prefix_hit_cuts_prefill_only():
    cold = OfflinePass(LLAMA_3_1_8B, 500, 1100, 100)
    warm = OfflinePass(LLAMA_3_1_8B, 500, 1100, 100, prefix_cached=True)
    assert warm.prefill_gpu_s() < 0.8 * cold.prefill_gpu_s()
    assert warm.decode_gpu_s() == cold.decode_gpu_s()


def test_a_model_that_does_not_fit_says_so():
    with pytest.raises(ValueError, match="no room for KV"):
        OfflinePass(LLAMA_3_3_70B, 0, 1000, 100, tp=1).batch()


@pytest.mark.parametrize("kwargs,name", [({"unique": 0}, "unique"), ({"output": -1}, "output"),
                                         ({"tp": 0}, "tp"), ({"shared_prefix": -5}, "shared_prefix")])
def test_bad_input_names_the_parameter(kwargs, name):
    args = {"model": LLAMA_3_1_8B, "shared_prefix": 100, "unique": 100, "output": 10} | kwargs
    with pytest.raises(ValueError, match=name):
        OfflinePass(**args)


def test_vllm_defaults_regime_costs_more_than_the_ceiling():
    ceiling = OfflinePass(LLAMA_3_3_70B, 600, 1100, 150, tp=4)
    vllm = OfflinePass(LLAMA_3_3_70B, 600, 1100, 150, tp=4, regime="vllm-defaults")
    assert vllm.step_model.regime == "vllm-defaults"
    assert vllm.prefill_gpu_s() > ceiling.prefill_gpu_s() and vllm.decode_gpu_s() > ceiling.decode_gpu_s()
    assert vllm.batch() == ceiling.batch()  # the regime prices time, not memory
    with pytest.raises(ValueError, match="regime"):
        OfflinePass(LLAMA_3_1_8B, 0, 100, 10, regime="tuned").step_model


def test_kv_heads_replicate_past_their_count():
    # Llama 3.1 8B has 8 KV heads: at TP16 each rank keeps one (replicated), so the pool holds no more
    # tokens per rank than at TP8 (a little more: each rank holds half the weights)
    tp8 = OfflinePass(LLAMA_3_1_8B, 0, 2000, 100, tp=8, max_num_seqs=100_000)
    tp16 = OfflinePass(LLAMA_3_1_8B, 0, 2000, 100, tp=16, max_num_seqs=100_000)
    assert tp16.kv_capacity().replicated and not tp8.kv_capacity().replicated
    assert tp16.batch() < 1.1 * tp8.batch()  # not ~2x, as splitting 8 heads 16 ways would give


def test_prefix_hit_rounds_to_whole_blocks():
    p = OfflinePass(LLAMA_3_1_8B, shared_prefix=300, unique=1700, output=200).prefix_hit()
    assert (p.shared_prefix, p.unique, p.prefix_cached) == (288, 1712, True)
    assert p.prompt == 2000
    assert OfflinePass(LLAMA_3_1_8B, 10, 100, 10).prefix_hit().prefix_cached is False
