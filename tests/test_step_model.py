"""The one step model: a step is a sum over kernel classes, each at its own bound."""

import numpy as np
import pytest

from solutions import step_defaults
from solutions.calibration.kernel_fits import A100_FIT
from solutions.hardware import A100_80GB_SXM, H100_PCIE, H100_SXM, L40S
from solutions.models import LLAMA_3_1_8B, LLAMA_3_1_405B, LLAMA_3_3_70B, MIXTRAL_8X7B, NEMOTRON_H_8B
from solutions.roofline import decode_step, kernel_time
from solutions.step_model import (BF16, FP8, INT8, W4A16, GEMMS_PER_LAYER, Interconnect, StepModel, StepShape,
                                  gemm_layer_cost)


def test_critical_batch_is_peak_flops_over_bandwidth():
    """The GEMMs turn compute-bound at ~ F / BW tokens (2 FLOP per weight, 2 bytes per weight)."""
    h100 = StepModel.of(LLAMA_3_1_8B, H100_SXM)
    a100 = StepModel.of(LLAMA_3_1_8B, A100_80GB_SXM)
    assert h100.critical_batch_at_peak == pytest.approx(989.4e12 / 3.35e12, rel=1e-9)  # 295
    assert round(h100.critical_batch_at_peak) == 295
    assert round(a100.critical_batch_at_peak) == 153
    # at the fractions of peak fitted on H100 GEMMs (0.68 compute, 0.91 bandwidth): ~221 on H100
    assert h100.critical_batch == pytest.approx(295.3 * 0.68 / 0.91, rel=1e-3)


def test_precision_moves_the_critical_batch_only_when_bytes_and_flops_move_apart():
    """W8A8 doubles the peak and halves the bytes per weight: the critical batch stays put.
    Weight-only INT4 quarters the bytes at the same peak: it falls to a quarter."""
    bf16 = StepModel.of(LLAMA_3_1_8B, H100_SXM).critical_batch_at_peak
    assert StepModel.of(LLAMA_3_1_8B, H100_SXM, precision=FP8).critical_batch_at_peak == pytest.approx(bf16, rel=1e-3)
    assert StepModel.of(LLAMA_3_1_8B, H100_SXM, precision=W4A16).critical_batch_at_peak == pytest.approx(bf16 / 4)
    with pytest.raises(ValueError, match="A100 80GB SXM has no FP8"):
        StepModel.of(LLAMA_3_1_8B, A100_80GB_SXM, precision=FP8)
    # A100's INT8 tensor cores: twice the BF16 peak, one byte per weight: 153 again
    assert StepModel.of(LLAMA_3_1_8B, A100_80GB_SXM, precision=INT8).critical_batch_at_peak == pytest.approx(153, abs=1)


def test_mixed_step_matches_a_hand_derivation():
    """32 decodes at 1,000 cached tokens + a 512-token prefill chunk, Llama 3.1 8B on one H100, at
    datasheet peaks with no floors, so every term can be written down from the shapes."""
    ideal = A100_FIT.__class__(gemm=_ideal(), attention=_ideal(), elementwise=_ideal(), source="ideal")
    sm = StepModel(LLAMA_3_1_8B, H100_SXM, fit=ideal, interconnect=None, overhead_s=1e-3)
    t = sm.mixed(decodes=32, decode_context=1000, prefill_tokens=512)
    F, BW = 989.4e12, 3.35e12
    L, h, q, kv, ff, V = 32, 4096, 4096, 1024, 14336, 128256
    tokens, seqs = 32 + 512, 33
    weights = h * (q + 2 * kv) + q * h + 3 * h * ff  # one layer's GEMM weights
    gemm_flops = 2 * tokens * weights
    gemm_bytes = 2 * weights + tokens * 2 * (4 * h + 2 * q + 2 * kv + 3 * ff)
    assert t.gemm_s == pytest.approx(L * max(gemm_flops / F, gemm_bytes / BW), rel=1e-9)
    assert gemm_flops / F > gemm_bytes / BW  # 544 tokens: past the critical batch, compute-bound
    pairs = 32 * 1001 + 512 * 513 / 2
    cached = 32 * 1000
    kv_layer = 2 * kv * 2  # K and V, bf16, one layer
    att_flops = 4 * 32 * 128 * pairs
    att_bytes = cached * kv_layer + tokens * kv_layer + tokens * 2 * (2 * q + 2 * kv)
    assert t.attention_s == pytest.approx(L * max(att_flops / F, att_bytes / BW), rel=1e-9)
    assert att_bytes / BW > att_flops / F  # while attention stays bandwidth-bound
    assert t.lm_head_s == pytest.approx(max(2 * seqs * V * h / F, (2 * V * h + seqs * 2 * (h + V)) / BW), rel=1e-9)
    assert t.elementwise_s == pytest.approx(L * tokens * 2 * (7 * h + 2 * (q + kv) + 3 * ff) / BW, rel=1e-9)
    assert t.allreduce_s == 0 and t.overhead_s == 1e-3
    assert t.seconds == pytest.approx(t.gemm_s + t.attention_s + t.elementwise_s + t.lm_head_s + 1e-3)


def test_a_step_is_a_sum_not_a_max_of_totals():
    """Past the critical batch the GEMMs are compute-bound while attention stays bandwidth-bound:
    their times add, so the step is well above one roofline over the step's totals."""
    sm = StepModel.of(LLAMA_3_1_8B, H100_SXM)
    t = sm.decode(512, 300)
    one_roofline = kernel_time(decode_step(LLAMA_3_1_8B, 512, 300), H100_SXM, A100_FIT.gemm)
    assert t.kernel_s > 1.3 * one_roofline
    assert t.gemm_s > 0.2 * t.seconds and t.attention_s > 0.2 * t.seconds


def test_fast_path_equals_the_kernel_by_kernel_roofline():
    sm = StepModel.of(LLAMA_3_1_8B, H100_SXM)
    for tokens in (1, 64, 300, 4096):
        cost = gemm_layer_cost(LLAMA_3_1_8B, tokens)
        eff = sm.fit.gemm
        slow = 32 * kernel_time(cost, H100_SXM, eff.__class__(eff.compute, eff.memory, GEMMS_PER_LAYER * eff.overhead_s))
        assert sm.gemm_s(tokens) == pytest.approx(slow, rel=1e-12)


def test_past_the_kv_head_count_each_rank_reads_a_replica_of_its_kv_projections():
    """Llama 3.1 405B has 8 KV heads: at TP 16 each rank holds one KV head's k_proj and v_proj
    (1/8 of them, as vLLM replicates them), not 1/16; every other weight is still split 16 ways.
    At TP 8 and below nothing changes."""
    m = LLAMA_3_1_405B
    kv_proj = 2 * m.hidden_size * m.num_kv_heads * m.head_dim  # k_proj + v_proj parameters, one layer
    tp8, tp16 = gemm_layer_cost(m, 1, 8), gemm_layer_cost(m, 1, 16)
    split = gemm_layer_cost(m, 1, 1).weight_bytes / 16  # everything split 16 ways (the old model)
    assert tp16.weight_bytes - split == pytest.approx(kv_proj * 2 * (1 / 8 - 1 / 16), rel=1e-9)
    assert tp16.flops - gemm_layer_cost(m, 1, 1).flops / 16 == pytest.approx(2 * kv_proj * (1 / 8 - 1 / 16), rel=1e-9)
    assert tp8.weight_bytes == gemm_layer_cost(m, 1, 1).weight_bytes / 8


@pytest.mark.parametrize("model, tp, regime", [(LLAMA_3_1_8B, 1, "kernel-ceiling"), (LLAMA_3_1_8B, 1, "vllm-defaults"),
                                               (LLAMA_3_3_70B, 4, "vllm-defaults"), (MIXTRAL_8X7B, 2, "kernel-ceiling")])
def test_the_simulators_fast_path_prices_every_step_as_the_breakdown_does(model, tp, regime):
    """`seconds` (one closure, the simulator's hot path) against `time(shape).seconds` (kernel class by
    kernel class) on prefill, decode and mixed steps, dense and MoE, one GPU and four."""
    sm = StepModel.of(model, H100_SXM, tp=tp, regime=regime)
    rng = np.random.default_rng(0)
    for _ in range(200):
        seqs = int(rng.integers(1, 300))
        tokens = seqs + int(rng.integers(0, 8192)) * int(rng.integers(0, 2))
        cached = float(rng.integers(0, 4000)) * seqs
        shape = StepShape(tokens, seqs, cached, cached + tokens * (tokens - seqs + 1))
        assert sm.seconds(shape.tokens, shape.seqs, shape.cached, shape.pairs) == pytest.approx(
            sm.time(shape).seconds, rel=1e-12)


def test_decode_runs_price_each_step_like_a_single_step():
    sm = StepModel.of(LLAMA_3_3_70B, H100_SXM, tp=4)
    cached = np.array([64 * 1500.0, 64 * 1501.0, 64 * 3000.0])
    run = sm.decode_run_seconds(64, cached)
    single = [sm.decode(64, c / 64).seconds for c in cached]
    assert run == pytest.approx(single, rel=1e-12)
    assert sm.seconds(64, 64, 64 * 1500.0, 64 * 1501.0) == pytest.approx(single[0], rel=1e-12)


def test_tensor_parallel_adds_two_allreduces_per_layer():
    sm = StepModel.of(LLAMA_3_3_70B, H100_SXM, tp=8)
    t = sm.decode(16, 1000)
    link = step_defaults.interconnect(H100_SXM)
    assert t.allreduce_s == pytest.approx(80 * 2 * link.allreduce_s(16 * 8192 * 2, 8))
    assert StepModel.of(LLAMA_3_3_70B, H100_SXM, tp=1).decode(16, 1000).allreduce_s == 0


def test_interconnect_fit_reproduces_its_measurements():
    for name, points in step_defaults.ALLREDUCE_MEASURED_US.items():
        gpus = step_defaults.ALLREDUCE_GPUS[name]
        link = step_defaults.fit_interconnect(points, gpus, name)
        for size, us in points.items():
            assert link.allreduce_s(size, gpus) * 1e6 == pytest.approx(us, rel=0.25, abs=2.5), (name, size)
        assert 5e-6 < link.latency_s < 15e-6


def test_moe_reads_more_experts_as_the_batch_grows():
    sm = StepModel.of(MIXTRAL_8X7B, H100_SXM, tp=2)
    per_token = [sm.decode(b, 1000).gemm_s / b for b in (1, 8, 64)]
    assert per_token[0] > per_token[1] > per_token[2]
    assert sm.decode(1, 1000).gemm_s < sm.decode(64, 1000).gemm_s


@pytest.mark.parametrize("kwargs,message", [
    (dict(model=NEMOTRON_H_8B, gpu=H100_SXM), "not Mamba hybrids"),
    (dict(model=LLAMA_3_1_8B, gpu=H100_PCIE, tp=2), "needs an interconnect"),
    (dict(model=LLAMA_3_1_8B, gpu=L40S, tp=2), "needs an interconnect"),
    (dict(model=LLAMA_3_1_8B, gpu=H100_SXM, tp=0), "tp must be a positive integer"),
])
def test_bad_configurations_say_what_is_wrong(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StepModel.of(**kwargs)


def test_bad_steps_say_what_is_wrong():
    sm = StepModel.of(LLAMA_3_1_8B, H100_SXM)
    with pytest.raises(ValueError, match="batch must be positive"):
        sm.decode(0, 100)
    with pytest.raises(ValueError, match="at least one token"):
        sm.time(StepShape(0, 0, 0, 0))
    with pytest.raises(ValueError, match="needs decodes or prefill"):
        sm.mixed(0, 100, 0)
    with pytest.raises(TypeError, match="unexpected overrides"):
        StepModel.of(LLAMA_3_1_8B, H100_SXM, efficiency=1)
    with pytest.raises(ValueError, match="latency_s"):
        Interconnect(latency_s=-1, bus_bytes_per_s=1e9, source="x")


def _ideal():
    from solutions.roofline import IDEAL
    return IDEAL


def test_large_allreduces_run_at_the_ring_bandwidth_small_ones_at_the_measured_latency():
    """Decode-sized messages (inside the measured range, up to 1 MiB) keep the measured custom
    all-reduce; the bytes of a prefill's 100 MB message beyond that range move at NCCL's ring
    bandwidth (about 370 GB/s on H100), not at the small-message fit extrapolated."""
    link = step_defaults.interconnect(H100_SXM)
    small = 16 * 8192 * 2
    assert link.allreduce_s(small, 8) == pytest.approx(link.latency_s + 1.75 * small / link.bus_bytes_per_s)
    big, edge = 6800 * 8192 * 2, 1024 * 1024
    expected = link.latency_s + 1.75 * edge / link.bus_bytes_per_s + 1.75 * (big - edge) / 370e9
    assert link.allreduce_s(big, 8) == pytest.approx(expected)
    sizes = np.geomspace(1e3, 1e9, 50)
    assert np.all(np.diff(link.allreduce_s(sizes, 8)) > 0)  # continuous and increasing in the size


def test_elementwise_kernels_cost_a_row_at_decode_sizes_and_bytes_at_prefill():
    """A block per token: with few tokens each elementwise kernel takes one row's bytes at the fitted
    per-block bandwidth, whatever the batch; with many, the batch's bytes at the HBM fraction. The
    norms' row is the full hidden state on every shard; SiLU-and-mul's is a shard's MLP."""
    e = A100_FIT.elementwise
    h, q, kv, ff = 4096, 4096, 1024, 14336
    for tp in (1, 8):
        sm = StepModel.of(LLAMA_3_1_8B, A100_80GB_SXM, tp=tp)
        rows = [2 * 2 * (q + kv) / tp, 2 * 3 * ff / tp, 2 * 2 * h, 2 * 2 * h, 2 * 3 * h]
        per_layer = sm.elementwise_s(1) / LLAMA_3_1_8B.num_layers
        assert per_layer == pytest.approx(sum(rows) / e.row_bytes_per_s + 5 * e.overhead_s, rel=1e-9)
        assert sm.elementwise_s(8) == pytest.approx(sm.elementwise_s(1), rel=1e-9)  # the row, not the batch
        big = sm.elementwise_s(8192) / LLAMA_3_1_8B.num_layers
        assert big == pytest.approx(8192 * sum(rows) / (A100_80GB_SXM.hbm_bytes_per_s * e.memory)
                                    + 5 * e.overhead_s, rel=1e-9)
    # the profiles: Llama-3-8B at 1 token, 27 us per layer at TP 1 and 16 us at TP 8 (a100_profiles.py)
    tp1 = StepModel.of(LLAMA_3_1_8B, A100_80GB_SXM).elementwise_s(1) / 32
    tp8 = StepModel.of(LLAMA_3_1_8B, A100_80GB_SXM, tp=8).elementwise_s(1) / 32
    assert tp1 == pytest.approx(27e-6, rel=0.1) and tp8 == pytest.approx(16e-6, rel=0.15)
