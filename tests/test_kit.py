"""The kit's derived numbers, pinned to figures published elsewhere (source on each line).

If a shape or a formula in solutions/ is wrong, one of these breaks."""

import math

import pytest

from solutions import hardware as hw
from solutions import models as m
from solutions import roofline as rl
from solutions.units import KiB, MiB

PUBLISHED = [
    # (what, computed, published, rel tolerance, source)
    ("Llama 3.1 8B parameters", m.LLAMA_3_1_8B.params / 1e9, 8.03, 0.002, "model card: 8.03B"),
    ("Llama 3.3 70B parameters", m.LLAMA_3_3_70B.params / 1e9, 70.6, 0.002, "model card / HF: 70.6B"),
    ("Llama 3.1 405B parameters", m.LLAMA_3_1_405B.params / 1e9, 405.9, 0.002, "HF safetensors: 405.85B"),
    ("Mixtral 8x7B total parameters", m.MIXTRAL_8X7B.params / 1e9, 46.7, 0.002, "Mistral blog: 46.7B"),
    ("Mixtral 8x7B active parameters", m.MIXTRAL_8X7B.active_params / 1e9, 12.9, 0.003, "Mistral blog: 12.9B"),
    ("Qwen2.5 7B parameters", m.QWEN2_5_7B.params / 1e9, 7.61, 0.002, "Qwen2.5 model card: 7.61B"),
    ("Qwen2.5 72B parameters", m.QWEN2_5_72B.params / 1e9, 72.7, 0.002, "Qwen2.5 model card: 72.7B"),
    ("Llama 3.1 8B bf16 KV per token, KiB", m.LLAMA_3_1_8B.kv_bytes_per_token() / KiB, 128, 0,
     "2 x 32 layers x 8 KV heads x 128 x 2 B = 128 KiB (vLLM docs, many write-ups)"),
    ("Llama 3.3 70B bf16 KV per token, KiB", m.LLAMA_3_3_70B.kv_bytes_per_token() / KiB, 320, 0,
     "2 x 80 x 8 x 128 x 2 B = 320 KiB"),
    ("Qwen2.5 7B bf16 KV per token, KiB", m.QWEN2_5_7B.kv_bytes_per_token() / KiB, 56, 0, "2 x 28 x 4 x 128 x 2 B"),
    ("H100 SXM BF16 ridge, FLOP/byte", hw.H100_SXM.ridge_flop_per_byte(), 295, 0.005,
     "989.4 TFLOP/s / 3.35 TB/s (scaling-book, many roofline write-ups quote ~295)"),
    ("A100 80GB BF16 ridge, FLOP/byte", hw.A100_80GB_SXM.ridge_flop_per_byte(), 153, 0.005,
     "312 TFLOP/s / 2.039 TB/s"),
    ("Nemotron-H 8B bf16 Mamba state per request, MiB", m.NEMOTRON_H_8B.recurrent_state_bytes() / MiB, 49.4,
     0.002, "24 layers x (3 x 10240 conv + 128 x 64 x 128 SSM) x 2 B, vLLM mamba2_state_shape"),
    ("Nemotron-H 8B bf16 KV per token, KiB", m.NEMOTRON_H_8B.kv_bytes_per_token() / KiB, 16, 0,
     "4 attention layers x 2 x 8 x 128 x 2 B"),
]


@pytest.mark.parametrize("what,computed,published,rel,source", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_derived_value_matches_published_figure(what, computed, published, rel, source):
    assert math.isclose(computed, published, rel_tol=rel, abs_tol=0 if rel else 1e-9), (
        f"{what}: kit computes {computed:.6g}, published {published} ({source})")


def test_llama_8b_weights_fill_16_gb_in_bf16_and_9_in_fp8():
    # FP8: 8.03 B parameters at one byte, plus one more byte for each of the 1.05 B parameters of
    # the embedding and the LM head, which vLLM keeps in BF16
    llama = m.LLAMA_3_1_8B
    assert llama.weight_bytes("bf16") / 1e9 == pytest.approx(16.06, rel=1e-3)
    assert llama.weight_bytes("fp8") / 1e9 == pytest.approx(9.08, rel=1e-3)
    assert llama.weight_bytes("fp8") - llama.params == 2 * llama.vocab_size * llama.hidden_size
    tied = m.LLAMA_3_2_1B  # one vocabulary matrix, shared by the embedding and the LM head
    assert tied.tie_word_embeddings
    assert tied.weight_bytes("fp8") - tied.params == tied.vocab_size * tied.hidden_size


def test_decode_flops_are_two_per_parameter_per_token_plus_attention():
    model = m.LLAMA_3_1_8B
    no_context = rl.decode_step(model, 1, 0)
    body = model.params - model.embedding_params  # the input embedding is a gather
    assert no_context.flops == pytest.approx(2 * body + rl.attention_flops(model, 1, 0))


def test_prefill_attention_is_quadratic_and_counts_the_causal_half():
    model = m.LLAMA_3_1_8B
    per_pair = 4 * model.n_attention * model.num_heads * model.head_dim
    assert rl.attention_flops(model, 1000, 0) == pytest.approx(per_pair * 1000 * 1001 / 2)
    assert rl.attention_flops(model, 1, 999) == pytest.approx(per_pair * 1000)


def test_small_batch_decode_is_memory_bound_and_weights_dominate():
    cost = rl.decode_step(m.LLAMA_3_1_8B, 1, 1024)
    gpu = hw.H100_SXM
    assert rl.memory_time(cost, gpu) > 10 * rl.compute_time(cost, gpu)
    assert cost.weight_bytes / cost.bytes > 0.95


def test_one_kernel_is_max_of_compute_and_memory_plus_its_floor():
    cost = rl.prefill(m.LLAMA_3_1_8B, 4096)
    gpu, eff = hw.H100_SXM, rl.Efficiency(compute=0.7, memory=0.8, overhead_s=1e-3)
    expected = max(rl.compute_time(cost, gpu, eff), rl.memory_time(cost, gpu, eff)) + 1e-3
    assert rl.kernel_time(cost, gpu, eff) == pytest.approx(expected)
    assert rl.compute_time(cost, gpu) > rl.memory_time(cost, gpu)  # a 4K prefill is compute-bound


def test_mbu_and_mfu_are_achieved_over_peak():
    gpu = hw.H100_SXM
    assert rl.mbu(3.35e12 * 0.5, 1.0, gpu) == pytest.approx(0.5)
    assert rl.mfu(989.4e12 * 0.25, 1.0, gpu) == pytest.approx(0.25)
    assert rl.mbu(2 * 3.35e12, 1.0, gpu, n_gpus=2) == pytest.approx(1.0)


def test_moe_reads_only_touched_experts():
    model = m.MIXTRAL_8X7B
    one, many = rl.weight_bytes_read(model, 1), rl.weight_bytes_read(model, 512)
    assert one == pytest.approx((model.active_params - model.embedding_params) * 2, rel=1e-9)
    assert many == pytest.approx((model.params - model.embedding_params) * 2, rel=1e-6)


def test_an_fp8_step_streams_its_lm_head_in_bf16():
    model = m.LLAMA_3_1_8B
    bf16, fp8 = rl.weight_bytes_read(model, 1), rl.weight_bytes_read(model, 1, "fp8")
    assert fp8 == pytest.approx(bf16 / 2 + model.embedding_params, rel=1e-12)


def test_gpu_units_are_decimal_and_bidirectional_links_halve():
    assert hw.H100_SXM.hbm_capacity_bytes == 80e9
    assert hw.H100_SXM.nvlink_unidir_bytes_per_s == 450e9
    with pytest.raises(ValueError, match="no FP8"):
        hw.A100_80GB_SXM.peak_flops("fp8")
    with pytest.raises(ValueError, match="no NVLink"):
        hw.L40S.nvlink_unidir_bytes_per_s


def test_every_constant_has_a_source():
    for thing in list(hw.GPUS.values()) + list(m.MODELS.values()):
        assert thing.source.strip(), f"{thing.name} has no source"


def test_bad_efficiency_is_rejected_with_its_name():
    with pytest.raises(ValueError, match="efficiencies"):
        rl.Efficiency(compute=1.5)
    with pytest.raises(ValueError, match="batch must be positive"):
        rl.decode_step(m.LLAMA_3_1_8B, 0, 10)
