"""Steady state in the simulator: the steady window's rates against closed forms, the overload
flag, and Little's law on KV tokens.

- on a stable M/M/1 queue the window's throughput, SLO attainment (P(sojourn <= x) =
  1 - exp(-(mu - lambda) x)), goodput and mean number in system match the closed forms;
- an overloaded queue (rho 1.3) is flagged, and its completion ratio is 1/rho;
- q38's 600-request run looks healthy over its whole span (96% SLO met) and is flagged overloaded;
- the KV a stable LLM run holds matches lambda x TPOT x (E[p](E[n] - 1) + (E[n^2] - E[n])/2).
"""

import math

import numpy as np
import pytest

from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_8B
from solutions.serving import (
    SLO, Empirical, Exponential, LogNormal, Poisson, Replica, Workload, kv_tokens_held, simulate)


def _mm1(rho, n=20_000, seed=0):
    work = Workload.single_server(n, Poisson(rho), Exponential(1.0), seed=seed)
    return simulate(work, Replica.single_server())


@pytest.fixture(scope="module")
def stable_mm1():
    return _mm1(0.5)


def test_steady_window_rates_match_the_mm1_closed_forms(stable_mm1):
    lam, mu, x = 0.5, 1.0, 2.0
    w = stable_mm1.steady(SLO(e2e_s=x))
    assert w.is_steady and not w.overloaded and not w.reasons
    assert w.method == "arrivals, warm-up dropped"
    assert w.throughput_req_per_s == pytest.approx(lam, rel=0.03)
    attain = 1 - math.exp(-(mu - lam) * x)  # M/M/1 sojourn time is exponential with rate mu - lambda
    assert w.slo_attainment == pytest.approx(attain, rel=0.05)
    assert w.goodput_req_per_s == pytest.approx(lam * attain, rel=0.05)
    assert w.mean_in_system == pytest.approx(lam / (mu - lam), rel=0.15)
    assert w.completion_ratio == pytest.approx(1, abs=0.01)


def test_an_overloaded_queue_is_flagged_and_completes_one_over_rho():
    res = _mm1(1.3, n=10_000)
    w = res.steady()
    assert w.overloaded and not w.is_steady and res.overloaded
    assert w.completion_ratio == pytest.approx(1 / 1.3, rel=0.04)
    assert "overloaded" in w.verdict() and "completions do not keep up" in w.verdict()
    assert w.backlog_growth == pytest.approx(w.arrivals * (1 - 1 / 1.3), rel=0.1)


def test_a_marginal_overload_the_backlog_rule_misses_is_caught_by_its_climbing_waits():
    """rho 1.02 over 20,000 arrivals: the backlog gains ~4.5% of the window's arrivals (under the 5%
    tolerance), but each later arrival waits longer: flagged, with the wait's rise as the reason."""
    res = _mm1(1.02, n=20_000)
    w = res.steady()
    assert w.backlog_growth < 0.05 * w.arrivals  # the backlog rule alone would call it steady
    assert w.wait_growth_s > 300 and w.overloaded and not w.is_steady
    assert any("queue wait climbs" in r for r in w.reasons)
    # a stable queue at rho 0.9 over as long a window is not flagged
    calm = _mm1(0.9, n=20_000).steady()
    assert calm.is_steady and not calm.overloaded, calm.reasons


def test_a_short_run_past_kv_capacity_looks_healthy_over_its_span_and_is_flagged():
    """q38's transient: 600 long-answer requests at 1.7 req/s on one H100. Over the whole span most
    requests meet the SLO; the steady window shows the backlog growing and the pool filling."""
    work = Workload.generate(600, Poisson(1.7), prompt=LogNormal(800, 1.0), output=LogNormal(3000, 1.0), seed=1)
    # on the kernel ceiling, where the run still looks healthy over its span (vLLM at its defaults
    # is slower: there the same run misses the SLO for 40% of requests over the whole span too)
    res = simulate(work, Replica.of(LLAMA_3_1_8B, H100_SXM, regime="kernel-ceiling"))
    slo = SLO(ttft_s=10.0, tpot_s=0.040)
    assert res.summary(slo, window="run")["slo_attainment"] > 0.9
    w = res.steady(slo)
    assert w.overloaded and w.completion_ratio < 0.9 and w.kv_trend > 0.3
    assert w.drain_share > 0.3  # the whole-span rates are diluted by the drain


def test_summary_reads_the_steady_window_by_default(stable_mm1):
    slo = SLO(e2e_s=2.0)
    assert stable_mm1.summary(slo, window="steady") == stable_mm1.summary(slo)
    assert stable_mm1.summary(slo, window="run")["requests"] == len(stable_mm1)
    s = stable_mm1.summary(slo)
    w = stable_mm1.steady(slo)
    assert s["steady"]["is_steady"] and s["steady"]["method"] == w.method
    assert s["goodput_req_per_s"] == pytest.approx(w.goodput_req_per_s)
    assert s["slo_attainment"] == pytest.approx(w.slo_attainment)
    assert s["requests"] == w.arrivals
    with pytest.raises(ValueError, match="window must be"):
        stable_mm1.summary(slo, window="tail")


def test_little_law_on_kv_tokens_matches_a_stable_run():
    work = Workload.generate(2000, Poisson(10.0), LogNormal(500, 1.0), LogNormal(300, 1.0), seed=3)
    res = simulate(work, Replica.of(LLAMA_3_1_8B, H100_SXM))
    w = res.steady()
    assert w.is_steady
    tpot = float(np.nanmean(res.tpot[w.requests]))
    held = kv_tokens_held(w.arrival_rate, tpot, Empirical(work.prompt_tokens), Empirical(work.output_tokens))
    assert w.mean_kv_tokens == pytest.approx(held, rel=0.05)  # blocks round up: a little above
    # the shorthand lambda x TPOT x (E[p]E[n] + E[n^2]/2) is the same to within E[p] + E[n]/2
    p, o = Empirical(work.prompt_tokens), Empirical(work.output_tokens)
    short = w.arrival_rate * tpot * (p.mean * o.mean + o.second_moment / 2)
    assert short == pytest.approx(held, rel=0.01)


def test_bad_inputs_are_refused(stable_mm1):
    burst = simulate(Workload(np.zeros(5), 10, 10), Replica.of(LLAMA_3_1_8B, H100_SXM))
    with pytest.raises(ValueError, match="request-rate inf"):
        burst.steady()
    with pytest.raises(ValueError, match='window="run"'):
        burst.summary()
    with pytest.raises(ValueError, match="warmup_fraction"):
        stable_mm1.steady(warmup_fraction=1.5)
    with pytest.raises(ValueError, match="tpot_s"):
        kv_tokens_held(1.0, 0.0, LogNormal(500, 1.0), LogNormal(300, 1.0))
    with pytest.raises(TypeError, match="distribution"):
        kv_tokens_held(1.0, 0.01, 500, LogNormal(300, 1.0))
