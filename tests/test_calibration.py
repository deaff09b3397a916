"""The calibrated roofline against measured A100 kernel times it was not fitted on.

Numbers printed here are the ones q03 states (run `pytest -s tests/test_calibration.py`)."""

import pytest

from solutions import calibration as cal
from solutions import fidelity_a100 as data
from solutions.models import LLAMA_3_1_8B, LLAMA_3_3_70B, MIXTRAL_8X7B


def test_the_fit_reproduces_the_published_factors():
    assert cal.fit_a100() == cal.A100_FIT


def test_held_out_median_error_is_within_15_percent():
    summary = cal.held_out_summary()
    naive = cal.held_out_summary(naive=True)
    for kind, s in summary.items():
        p = s.worst_point
        print(f"{kind:16s} n={s.n:3d}  calibrated median {s.median:6.1%} worst {s.worst:6.1%} "
              f"({p.model} tp={p.tp} tokens={p.tokens} ctx={p.context_len}, {p.measured_s * 1e6:.0f} us); "
              f"naive median {naive[kind].median:6.1%} worst {naive[kind].worst:6.1%}")
        assert s.median < 0.15, f"{kind}: held-out median error {s.median:.1%}"
        assert s.median < naive[kind].median / 3, f"{kind}: calibration barely beats the naive roofline"
    # the worst cases are the smallest kernels and the ridge; bounded, not hidden
    assert summary["all held out"].worst < 0.30


def test_the_held_out_points_are_really_held_out():
    train = [p for p in cal.layer_points() if not p.held_out]
    test = [p for p in cal.layer_points() if p.held_out]
    assert {p.model for p in test if p.kind != "decode attention"} == set(cal.HELD_OUT_MODELS)
    assert not {p.model for p in train if p.kind != "decode attention"} & set(cal.HELD_OUT_MODELS)
    assert min(p.context_len for p in test if p.kind == "decode attention") >= cal.ATTENTION_HELD_OUT_FROM_CONTEXT
    assert max(p.context_len for p in train if p.kind == "decode attention") < cal.ATTENTION_HELD_OUT_FROM_CONTEXT


def test_the_naive_roofline_is_always_optimistic():
    """Peak FLOP/s and peak bandwidth are ceilings: no measured kernel may beat them."""
    assert all(p.naive_s < p.measured_s for p in cal.points())


@pytest.mark.parametrize("row", data.LINEAR[::13], ids=lambda r: f"{r.model}-tp{r.tp}-{r.num_tokens}")
def test_weight_bytes_match_the_profiled_shard(row):
    cost = cal.gemm_layer_cost(cal.profiled_model(row.shape), row.num_tokens, row.tp)
    assert cost.weight_bytes == row.weight_bytes_per_shard
    assert row.source.startswith(data.VIDUR + ":data/profiling/compute/a100/")


@pytest.mark.parametrize("profiled,kit", [("meta-llama/Meta-Llama-3-8B", LLAMA_3_1_8B),
                                          ("meta-llama/Meta-Llama-3-70B", LLAMA_3_3_70B)])
def test_held_out_models_share_the_kit_models_layer_shapes(profiled, kit):
    """So the held-out error is the error of decode_step_time on the kit's Llama 3.x models."""
    one = cal.profiled_model(data.SHAPES[profiled])
    assert cal.linear_params_per_layer(one) == cal.linear_params_per_layer(kit)
    assert one.kv_bytes_per_token() == kit.kv_bytes_per_token() / kit.num_layers


def test_assembled_decode_step_matches_measured_kernel_sums():
    """A whole Llama 3 8B decode step (32 layers of GEMMs, attention and elementwise kernels,
    LM head excluded: not profiled) at the held-out context, against the summed profiles."""
    gemm_rows = {r.num_tokens: r for r in data.LINEAR if r.model == "meta-llama/Meta-Llama-3-8B" and r.tp == 1}
    checked = 0
    for a in data.ATTENTION_DECODE:
        if a.model != "meta-llama/Meta-Llama-3-8B" or a.kv_cache_size < cal.ATTENTION_HELD_OUT_FROM_CONTEXT:
            continue
        if a.batch_size not in gemm_rows:
            continue
        g = gemm_rows[a.batch_size]
        layer_ms = g.linear_total_ms + a.attn_decode_median_ms + cal._elementwise_ms(g)
        measured = LLAMA_3_1_8B.num_layers * layer_ms * 1e-3
        lm_head = cal.kernel_time(cal.lm_head_cost(LLAMA_3_1_8B, a.batch_size), cal.A100_FIT.gemm)
        predicted = cal.decode_step_time(LLAMA_3_1_8B, a.batch_size, a.kv_cache_size) - lm_head
        print(f"batch {a.batch_size:3d} ctx {a.kv_cache_size}: measured {measured * 1e3:.2f} ms, "
              f"calibrated {predicted * 1e3:.2f} ms ({predicted / measured - 1:+.1%})")
        assert predicted == pytest.approx(measured, rel=0.10)
        checked += 1
    assert checked == 5


def test_prefill_is_compute_bound_at_the_fitted_fraction():
    """Long prefill of Llama 3 8B: 2 FLOP per parameter per token at ~71% of 312 TFLOP/s."""
    t = cal.prefill_time(LLAMA_3_1_8B, 4096)
    flops = 2 * LLAMA_3_1_8B.matmul_params_per_token * 4096
    assert flops / t / 312e12 == pytest.approx(0.62, abs=0.05)  # < 0.71: attention, elementwise, floors


def test_for_model_gives_a_plain_efficiency_close_to_the_kernel_sum():
    from solutions.hardware import A100_80GB_SXM
    from solutions.roofline import decode_step, step_time
    eff = cal.A100_FIT.for_model(LLAMA_3_1_8B)
    coarse = step_time(decode_step(LLAMA_3_1_8B, 32, 2048, "fp16", "fp16"), A100_80GB_SXM, eff, "fp16")
    assert coarse == pytest.approx(cal.decode_step_time(LLAMA_3_1_8B, 32, 2048), rel=0.15)


@pytest.mark.parametrize("call,name", [
    (lambda: cal.decode_step_time(LLAMA_3_1_8B, 0, 100), "batch"),
    (lambda: cal.decode_step_time(LLAMA_3_1_8B, 8, 0), "context_len"),
    (lambda: cal.prefill_time(LLAMA_3_1_8B, 100, tp=0), "tp"),
    (lambda: cal.decode_step_time(MIXTRAL_8X7B, 8, 100), "Mixtral"),
    (lambda: cal.summarise([]), "at least one point"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_a_prefix_cache_hit_skips_the_cached_tokens_matmuls():
    full = cal.prefill_time(LLAMA_3_1_8B, 2000)
    hit = cal.prefill_time(LLAMA_3_1_8B, 1700, cached_tokens=300)
    assert cal.prefill_time(LLAMA_3_1_8B, 1700) < hit < full
    assert hit / full == pytest.approx(1700 / 2000, abs=0.03)  # matmuls scale with new tokens


def test_weight_only_fp8_helps_decode_not_long_prefill_on_a100():
    """A100 has no FP8 tensor cores: halving weight bytes only helps memory-bound steps."""
    decode = cal.decode_step_time(LLAMA_3_1_8B, 1, 1000, weight_dtype="fp8")
    assert decode / cal.decode_step_time(LLAMA_3_1_8B, 1, 1000) < 0.65  # LM head, floors, KV stay
    assert cal.prefill_time(LLAMA_3_1_8B, 4096, weight_dtype="fp8") == pytest.approx(
        cal.prefill_time(LLAMA_3_1_8B, 4096), rel=0.01)


def test_fp8_kv_halves_the_attention_bytes():
    bf16 = cal.attention_decode_cost(LLAMA_3_1_8B, 64, 2000)
    fp8 = cal.attention_decode_cost(LLAMA_3_1_8B, 64, 2000, kv_dtype="fp8")
    assert fp8.kv_read_bytes == bf16.kv_read_bytes / 2


@pytest.mark.parametrize("call,name", [
    (lambda: cal.decode_step_time(LLAMA_3_1_8B, 8, 100, weight_dtype="fp6"), "weight_dtype"),
    (lambda: cal.decode_step_time(LLAMA_3_1_8B, 8, 100, kv_dtype="e4m3"), "kv_dtype"),
    (lambda: cal.prefill_time(LLAMA_3_1_8B, 100, cached_tokens=-1), "cached_tokens"),
])
def test_bad_dtype_or_cache_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
