import pytest

from solutions.capacity import (
    batch_ceilings,
    batch_within,
    kv_pool_bytes,
    resident_batch,
    sequences_that_fit,
    steady_step_shape,
    total_memory_bytes,
)
from solutions.hardware import H100_SXM, L40S
from solutions.models import LLAMA_3_1_8B, LLAMA_3_3_70B, MIXTRAL_8X7B
from solutions.step_model import StepModel, StepShape
from solutions.units import GiB


def test_pool_is_total_times_utilization_minus_weights_and_reserve():
    pool = kv_pool_bytes(LLAMA_3_1_8B, 80 * GiB, 0.9, non_kv_bytes=2 * GiB)
    assert pool == pytest.approx(72 * GiB - LLAMA_3_1_8B.weight_bytes() - 2 * GiB)


def test_h100_uses_torch_total_and_others_fall_back_to_datasheet():
    assert total_memory_bytes(H100_SXM) / GiB == pytest.approx(79.18)
    assert total_memory_bytes(L40S) == L40S.hbm_capacity_bytes


@pytest.mark.parametrize("kwargs, name", [
    ({"gpu_memory_utilization": 0}, "gpu_memory_utilization"),
    ({"gpu_memory_utilization": 1.2}, "gpu_memory_utilization"),
    ({"non_kv_bytes": -1}, "non_kv_bytes"),
])
def test_pool_rejects_bad_input_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        kv_pool_bytes(LLAMA_3_1_8B, 80 * GiB, **kwargs)


def test_pool_says_when_weights_do_not_fit():
    with pytest.raises(ValueError, match="no room for KV"):
        kv_pool_bytes(LLAMA_3_3_70B, 80 * GiB)


def test_sequences_that_fit_is_a_floor_of_pool_over_kv_per_sequence():
    per_seq = 2048 * LLAMA_3_1_8B.kv_bytes_per_token()
    assert sequences_that_fit(10.5 * per_seq, LLAMA_3_1_8B, 2048) == 10
    with pytest.raises(ValueError, match="context_len"):
        sequences_that_fit(1e9, LLAMA_3_1_8B, 0)


@pytest.mark.parametrize("model", [LLAMA_3_1_8B, MIXTRAL_8X7B], ids=lambda m: m.name)
@pytest.mark.parametrize("context_len", [256, 2048, 32768])
def test_batch_within_is_the_largest_batch_that_meets_the_target(model, context_len):
    sm = StepModel.of(model, H100_SXM, tp=1 if model is LLAMA_3_1_8B else 2)
    tpot = 40e-3
    b = batch_within(sm, context_len, tpot)
    assert b >= 1
    assert sm.decode(b, context_len).seconds <= tpot < sm.decode(b + 1, context_len).seconds
    assert batch_within(sm, context_len, 1e-4) == 0


def test_ceilings_pick_the_lowest_and_the_knee_is_not_one():
    pool = kv_pool_bytes(LLAMA_3_1_8B, total_memory_bytes(H100_SXM))
    sm = StepModel.of(LLAMA_3_1_8B, H100_SXM)
    c = batch_ceilings(sm, 4096, pool, 50e-3)  # at 2,048 tokens KV (223) and the ridge (221) are within 1%
    assert c.binding == "KV memory" and c.lowest == c.kv_memory
    assert c.compute_ridge == sm.critical_batch
    short = batch_ceilings(sm, 128, pool, 50e-3)  # short contexts: the TPOT target binds, far past the knee
    assert short.binding == "latency target" and short.lowest == short.latency > 2 * short.compute_ridge
    assert "compute ridge" not in short.as_dict()
    # past the knee the time per token still falls: throughput rises towards the latency ceiling
    knee = round(short.compute_ridge)
    per_token = [sm.decode(b, 128).seconds / b for b in (knee, 2 * knee, short.latency)]
    assert per_token[0] > per_token[1] > per_token[2]


def test_prompts_in_the_step_lower_the_latency_ceiling_and_the_knee():
    sm = StepModel.of(LLAMA_3_1_8B, H100_SXM)
    pool = kv_pool_bytes(LLAMA_3_1_8B, total_memory_bytes(H100_SXM))
    context, output = 256, 32                      # 240-token prompts: 7.5 prompt tokens per decode per step
    shape = steady_step_shape(100, context, output)
    assert shape == StepShape.decode(100, context) + StepShape.prefill(240, sequences=100 / output)
    assert steady_step_shape(100, context) == StepShape.decode(100, context)
    b = batch_within(sm, context, 50e-3, output_tokens=output)
    step = lambda n: sm.time(steady_step_shape(n, context, output)).seconds  # noqa: E731
    assert step(b) <= 50e-3 < step(b + 1)
    mixed, decode_only = batch_ceilings(sm, context, pool, 50e-3, output), batch_ceilings(sm, context, pool, 50e-3)
    assert mixed.latency == b < decode_only.latency / 4
    assert mixed.kv_memory == decode_only.kv_memory
    assert mixed.compute_ridge == pytest.approx(sm.critical_batch / 8.5)
    with pytest.raises(ValueError):
        steady_step_shape(10, 100, 200)             # an answer longer than twice the context: no prompt left


def _line(fixed_s, per_seq_s):
    return lambda n: fixed_s + n * per_seq_s


def test_fixed_point_matches_the_closed_form_on_a_line():
    fixed, per_seq = 5e-3, 50e-6
    lam, out = 40.0, 250
    fp = resident_batch(_line(fixed, per_seq), lam, out)
    closed = lam * out * fixed / (1 - lam * out * per_seq)
    assert fp.converged and fp.batch == pytest.approx(closed, rel=1e-8)


def test_fixed_point_reports_no_convergence_above_capacity():
    fixed, per_seq = 5e-3, 50e-6
    lam_max = 1 / (250 * per_seq)
    fp = resident_batch(_line(fixed, per_seq), 1.01 * lam_max, 250, max_iter=10_000)
    assert not fp.converged
    assert fp.iterates == sorted(fp.iterates)  # it only grows: the queue runs away


def test_fixed_point_rejects_bad_input_by_name():
    with pytest.raises(ValueError, match="arrival_rate"):
        resident_batch(lambda n: 1e-3, 0, 100)
