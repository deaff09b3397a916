import numpy as np
import pytest

from solutions.capacity import step_model_capacity
from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_8B
from solutions.step_model import StepModel, StepShape
from solutions.calibration.fidelity import measured_vllm_gap
from solutions.tenancy_fleet.fleet import diurnal_rates, replica_capacity, run_fleet, sample_counts


def test_diurnal_mean_and_ratio():
    r = diurnal_rates(10.0, step_s=60, peak_to_trough=3.0)
    assert r.size == 1440
    assert r.mean() == pytest.approx(10.0, rel=1e-9)
    assert r.max() / r.min() == pytest.approx(3.0, rel=1e-6)
    assert np.argmax(r) == 14 * 60


def test_counts_are_poisson_and_burstiness_adds_variance():
    rng = np.random.default_rng(0)
    flat = np.full(20_000, 2.0)
    plain = sample_counts(flat, 1.0, rng)
    assert plain.mean() == pytest.approx(2.0, rel=0.03)
    assert plain.var() == pytest.approx(2.0, rel=0.06)
    bursty = sample_counts(flat, 1.0, rng, burstiness=1.0)
    assert bursty.mean() == pytest.approx(2.0, rel=0.05)
    assert bursty.var() > 1.5 * plain.var()


def test_fixed_fleet_conserves_requests_and_queues_only_past_capacity():
    counts = np.array([50, 50, 200, 200, 0, 0, 0])
    run = run_fleet(counts, 1.0, capacity=100.0, policy=lambda i, v: 1, load_s=0, initial=1)
    assert run.served.sum() + run.queue[-1] == counts.sum()
    assert run.queue[1] == 0 and run.queue[2] == 100 and run.queue[3] == 200
    assert run.queue[-1] == 0


def test_new_replicas_arrive_after_the_load_time():
    counts = np.full(10, 300)
    run = run_fleet(counts, 60.0, capacity=1.0, policy=lambda i, v: 5, load_s=240, initial=1)
    # asked for at the end of step 0; ready four steps later, in step 5
    assert list(run.replicas[:6]) == [1, 1, 1, 1, 1, 5]
    assert run.requested[0] == 5          # paid for while loading
    assert run.replica_hours == pytest.approx((1 * 0 + 5 * 10) * 60 / 3600)


def test_scale_in_cancels_loading_first():
    counts = np.zeros(4)
    wants = iter([4, 2, 2, 2])
    run = run_fleet(counts, 60.0, capacity=1.0, policy=lambda i, v: next(wants), load_s=600, initial=2)
    assert list(run.replicas) == [2, 2, 2, 2] and list(run.requested) == [4, 2, 2, 2]


def test_bad_input():
    with pytest.raises(ValueError):
        run_fleet([1, -1], 1.0, 1.0, lambda i, v: 1, load_s=0, initial=1)
    with pytest.raises(ValueError):
        diurnal_rates(0.0)


def test_replica_capacity_is_read_at_the_largest_batch_the_pool_holds():
    # q30, q32 and q33 price the same replica (Llama 3.1 8B, H100, 1,000 / 250 tokens) with this one function
    sm = StepModel.of(LLAMA_3_1_8B, H100_SXM)
    cap = replica_capacity(sm, 1000, 250)
    pool = step_model_capacity(sm)
    assert pool.holds(cap.batch, 1125) and not pool.holds(cap.batch + 1, 1125)

    def rate(n):
        return n / (250 * sm.time(StepShape.decode(n, 1125) + StepShape.prefill(1000, sequences=n / 250)).seconds)

    assert cap.rate == pytest.approx(rate(cap.batch))
    assert rate(cap.batch // 2) < cap.rate            # throughput still rises up to the pool's limit
    # the old reading, the marginal cost between 1,000 and 2,000 sequences (5x the pool), is a few percent high
    slope = 1000 / (250 * (sm.time(StepShape.decode(2000, 1125) + StepShape.prefill(1000, sequences=8)).seconds
                           - sm.time(StepShape.decode(1000, 1125) + StepShape.prefill(1000, sequences=4)).seconds))
    assert 1.0 < slope / cap.rate < 1.06


def test_measured_gap_is_a_slowdown_and_a_range():
    lo, hi = measured_vllm_gap(H100_SXM)
    assert 1.0 < lo <= hi < 3.0
