import math

import pytest

from solutions.capacity import (
    DECODE_EFFICIENCY,
    StepLine,
    batch_ceilings,
    kv_pool_bytes,
    resident_batch,
    sequences_that_fit,
    step_line,
    total_memory_bytes,
)
from solutions.hardware import H100_SXM, L40S
from solutions.models import LLAMA_3_1_8B, LLAMA_3_3_70B, MIXTRAL_8X7B
from solutions.roofline import decode_step, knee_batch, step_time
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


@pytest.mark.parametrize("context_len", [128, 256, 2048, 32768])
@pytest.mark.parametrize("batch", [1, 7, 300, 4096])
def test_step_line_reproduces_the_kit_step_time(context_len, batch):
    line = step_line(LLAMA_3_1_8B, H100_SXM, context_len, DECODE_EFFICIENCY)
    kit = step_time(decode_step(LLAMA_3_1_8B, batch, context_len), H100_SXM, DECODE_EFFICIENCY)
    assert line.step_time(batch) == pytest.approx(kit, rel=1e-9)


@pytest.mark.parametrize("context_len", [128, 256, 2048])
def test_ridge_agrees_with_the_kit_knee(context_len):
    line = step_line(LLAMA_3_1_8B, H100_SXM, context_len, DECODE_EFFICIENCY)
    assert line.ridge == pytest.approx(knee_batch(LLAMA_3_1_8B, H100_SXM, context_len, DECODE_EFFICIENCY))


def test_step_line_refuses_moe():
    with pytest.raises(ValueError, match="dense"):
        step_line(MIXTRAL_8X7B, H100_SXM, 1024)


def test_knee_is_half_the_bandwidth_ceiling():
    line = StepLine(fixed_s=4e-3, per_seq_memory_s=50e-6, per_seq_compute_s=10e-6)
    assert line.throughput(line.knee) == pytest.approx(line.bandwidth_ceiling / 2)
    assert line.ridge == math.inf


def test_batch_within_meets_the_target_exactly():
    line = StepLine(fixed_s=5e-3, per_seq_memory_s=100e-6, per_seq_compute_s=20e-6)
    b = line.batch_within(50e-3)
    assert b == pytest.approx(450)
    assert line.step_time(b) == pytest.approx(50e-3)
    assert line.batch_within(5e-3) == 0.0


def test_compute_bound_latency_ceiling_uses_the_compute_line():
    line = StepLine(fixed_s=5e-3, per_seq_memory_s=10e-6, per_seq_compute_s=25e-6)
    assert line.batch_within(50e-3) == pytest.approx(2000)


def test_ceilings_pick_the_lowest():
    pool = kv_pool_bytes(LLAMA_3_1_8B, total_memory_bytes(H100_SXM))
    c = batch_ceilings(LLAMA_3_1_8B, H100_SXM, 2048, pool, 50e-3, DECODE_EFFICIENCY)
    assert c.binding == "KV memory" and c.lowest == c.kv_memory


def test_fixed_point_matches_the_closed_form_on_a_line():
    line = StepLine(fixed_s=5e-3, per_seq_memory_s=50e-6, per_seq_compute_s=10e-6)
    lam, out = 40.0, 250
    fp = resident_batch(line.step_time, lam, out)
    closed = lam * out * line.fixed_s / (1 - lam * out * line.per_seq_memory_s)
    assert fp.converged and fp.batch == pytest.approx(closed, rel=1e-8)


def test_fixed_point_reports_no_convergence_above_capacity():
    line = StepLine(fixed_s=5e-3, per_seq_memory_s=50e-6, per_seq_compute_s=10e-6)
    lam_max = 1 / (250 * line.per_seq_memory_s)
    fp = resident_batch(line.step_time, 1.01 * lam_max, 250, max_iter=10_000)
    assert not fp.converged
    assert fp.iterates == sorted(fp.iterates)  # it only grows: the queue runs away


def test_fixed_point_rejects_bad_input_by_name():
    with pytest.raises(ValueError, match="arrival_rate"):
        resident_batch(lambda n: 1e-3, 0, 100)


def test_decode_efficiency_stays_close_to_the_a100_calibration():
    from solutions.calibration import A100_FIT
    assert DECODE_EFFICIENCY.compute == pytest.approx(A100_FIT.gemm.compute, abs=0.03)
    assert A100_FIT.gemm.memory <= DECODE_EFFICIENCY.memory <= A100_FIT.attention.memory
