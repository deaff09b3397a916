import pytest

from solutions.hardware import H100_SXM
from solutions.tenancy_fleet.lora import (ALL_LINEAR, QV, adapter_bytes, adapter_params, lora_kernels, lora_step_cost, lora_step_seconds,
                           lora_path_seconds, memset_kernels, projections, slot_bytes)
from solutions.roofline import IDEAL, Efficiency
from solutions.models import LLAMA_3_1_8B, LLAMA_3_3_70B, MIXTRAL_8X7B


def test_projection_shapes_add_up_to_the_layer_weights():
    # The seven projections hold every weight of a layer except its two norms.
    for m in (LLAMA_3_1_8B, LLAMA_3_3_70B):
        per_layer = sum(i * o for i, o in projections(m).values())
        assert per_layer == m.attention_params_per_layer - m.hidden_size + m.mlp_params_per_layer() - m.hidden_size


def test_a_published_adapter_size():
    # PEFT's rank-8 q/v adapter on a 4096-wide model with 1024-wide k/v: 8 x (8192 + 5120) x 32 = 3.4M numbers.
    assert adapter_params(LLAMA_3_1_8B, 8, QV) == 8 * (4096 + 4096 + 4096 + 1024) * 32


def test_size_is_linear_in_rank_and_slots_pad_to_the_max_rank():
    a16, a128 = adapter_bytes(LLAMA_3_1_8B, 16), adapter_bytes(LLAMA_3_1_8B, 128)
    assert a128 == pytest.approx(8 * a16)
    assert slot_bytes(LLAMA_3_1_8B, 128) == pytest.approx(a128)
    assert slot_bytes(LLAMA_3_1_8B, 16) > adapter_bytes(LLAMA_3_1_8B, 16, QV)


def test_step_cost_weight_bytes_follow_distinct_adapters_flops_follow_tokens():
    one = lora_step_cost(LLAMA_3_1_8B, 64, 1, 16)
    eight = lora_step_cost(LLAMA_3_1_8B, 64, 8, 16)
    assert eight.weight_bytes == pytest.approx(8 * one.weight_bytes)
    assert eight.flops == one.flops and eight.activation_bytes == one.activation_bytes
    assert lora_step_cost(LLAMA_3_1_8B, 128, 8, 16).flops == pytest.approx(2 * eight.flops)
    # one adapter's weights are read exactly once per step: the adapter's own size
    assert one.weight_bytes == pytest.approx(adapter_bytes(LLAMA_3_1_8B, 16))
    # and the FLOPs are 2 x tokens x the adapter's parameters
    assert one.flops == pytest.approx(2 * 64 * adapter_params(LLAMA_3_1_8B, 16))


def test_eight_kernels_per_layer_and_their_floors():
    assert len(lora_kernels(LLAMA_3_1_8B, 8, 1, 16)) == 8
    floor = Efficiency(overhead_s=5e-6)
    base = lora_step_seconds(LLAMA_3_1_8B, H100_SXM, IDEAL, 8, 1, 16)
    assert lora_step_seconds(LLAMA_3_1_8B, H100_SXM, floor, 8, 1, 16) == pytest.approx(base + 8 * 32 * 5e-6)
    # decode-sized kernels are memory-bound: more distinct adapters cost more time at the same tokens
    assert lora_step_seconds(LLAMA_3_1_8B, H100_SXM, IDEAL, 64, 64, 16) > 4 * lora_step_seconds(LLAMA_3_1_8B, H100_SXM, IDEAL, 64, 1, 16)


def test_vllm_path_adds_one_memset_per_wrapped_layer():
    # vLLM 0.33.0: memset + shrink + expand per wrapped layer, 12 launches per Llama layer
    assert len(memset_kernels(LLAMA_3_1_8B, 8, 16)) == 4
    floor = Efficiency(overhead_s=5e-6)
    kernels_only = lora_step_seconds(LLAMA_3_1_8B, H100_SXM, floor, 64, 8, 16)
    path = lora_path_seconds(LLAMA_3_1_8B, H100_SXM, floor, 64, 8, 16)
    assert path > kernels_only + 4 * 32 * 5e-6 * 0.999
    # the buffer is max_lora_rank wide: padding the slots grows the memsets too
    assert lora_path_seconds(LLAMA_3_1_8B, H100_SXM, IDEAL, 64, 8, 128) > lora_path_seconds(LLAMA_3_1_8B, H100_SXM, IDEAL, 64, 8, 16)


@pytest.mark.parametrize("call", [
    lambda: adapter_params(LLAMA_3_1_8B, 0),
    lambda: adapter_params(LLAMA_3_1_8B, 8, ("qkv",)),
    lambda: adapter_params(LLAMA_3_1_8B, 8, ()),
    lambda: lora_step_cost(LLAMA_3_1_8B, 4, 8, 16),
    lambda: lora_kernels(LLAMA_3_1_8B, 8, 1, 0),
    lambda: memset_kernels(LLAMA_3_1_8B, 0, 16),
    lambda: projections(MIXTRAL_8X7B),
])
def test_bad_input_is_a_clear_error(call):
    with pytest.raises(ValueError):
        call()

