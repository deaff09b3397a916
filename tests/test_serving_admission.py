"""The admission rule of solutions.serving.admission: the chunk the TPOT target allows, and the
backlog rule at the door."""

import numpy as np
import pytest

from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_8B
from solutions.serving import Fixed, Poisson, Workload
from solutions.serving.admission import BacklogAdmission, prefill_rate_under_tpot, subset
from solutions.step_model import StepModel

SM = StepModel.of(LLAMA_3_1_8B, H100_SXM)


def test_chunk_is_the_largest_that_meets_the_target():
    chunk, rate = prefill_rate_under_tpot(SM, batch=40, context=2000, tpot_s=0.03)
    assert SM.mixed(40, 2000, chunk).seconds <= 0.03 < SM.mixed(40, 2000, chunk + 16).seconds
    assert rate == pytest.approx(chunk / SM.mixed(40, 2000, chunk).seconds)


def test_a_tighter_target_or_a_bigger_batch_leaves_a_smaller_chunk():
    base = prefill_rate_under_tpot(SM, batch=40, context=2000, tpot_s=0.03)[0]
    assert prefill_rate_under_tpot(SM, batch=40, context=2000, tpot_s=0.02)[0] < base
    assert prefill_rate_under_tpot(SM, batch=120, context=2000, tpot_s=0.03)[0] < base


def test_a_batch_that_alone_misses_the_target_is_an_error():
    with pytest.raises(ValueError, match="batch itself is too large"):
        prefill_rate_under_tpot(SM, batch=1000, context=4000, tpot_s=0.01)


def _burst(n, prompt, t=1.0):
    return Workload(np.full(n, t), prompt, 10)


def test_simultaneous_arrivals_fill_the_bucket_exactly():
    rule = BacklogAdmission(prefill_tokens_per_s=10_000, ttft_s=1.0)  # 10,000 tokens of backlog
    keep = rule.admit(_burst(8, 3_000))
    assert keep.tolist() == [True, True, True] + [False] * 5


def test_the_backlog_drains_at_the_prefill_rate():
    rule = BacklogAdmission(prefill_tokens_per_s=10_000, ttft_s=1.0)
    work = Workload(np.array([0.0, 0.0, 0.0, 0.0, 0.35]), 3_000, 10)
    # after 0.35 s the 9,000 queued tokens drained to 5,500: a fourth prompt of 3,000 fits again
    assert rule.admit(work).tolist() == [True, True, True, False, True]


def test_light_load_is_never_refused():
    work = Workload.generate(300, Poisson(2.0), Fixed(1_000), Fixed(50), seed=1)
    assert BacklogAdmission(prefill_tokens_per_s=20_000, ttft_s=0.5).admit(work).all()


def test_a_prompt_larger_than_the_bucket_is_always_refused():
    rule = BacklogAdmission(prefill_tokens_per_s=1_000, ttft_s=1.0)
    assert not rule.admit(_burst(1, 5_000)).any()


def test_prefix_hits_do_not_count_as_backlog():
    rule = BacklogAdmission(prefill_tokens_per_s=10_000, ttft_s=1.0)
    work = Workload(np.zeros(4), 5_000, 10, prefix_hit_tokens=4_000)
    assert rule.admit(work).all()


def test_subset_keeps_the_rows_and_checks_the_mask():
    work = Workload.generate(20, Poisson(5.0), Fixed(100), Fixed(10), seed=2, tenants=3)
    keep = np.arange(20) % 2 == 0
    part = subset(work, keep)
    assert len(part) == 10 and np.array_equal(part.arrival_s, work.arrival_s[keep])
    assert np.array_equal(part.tenant, work.tenant[keep])
    with pytest.raises(ValueError):
        subset(work, np.zeros(20, bool))


@pytest.mark.parametrize("rate, ttft", [(0, 1.0), (1e4, -1.0), (float("inf"), 1.0)])
def test_bad_parameters_are_refused(rate, ttft):
    with pytest.raises(ValueError):
        BacklogAdmission(prefill_tokens_per_s=rate, ttft_s=ttft)
