"""Benchmark-to-production measures and the gap bookkeeping (q40)."""

import math

import numpy as np
import pytest

from solutions.correctness_operations.benchmark_gap import GapFactor, bench_output_throughput, decompose
from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_8B
from solutions.serving import Fixed, LogNormal, Replica, Trace, Workload, simulate


@pytest.fixture(scope="module")
def replica():
    return Replica.of(LLAMA_3_1_8B, H100_SXM)


def test_bench_throughput_is_output_over_first_arrival_to_last_finish(replica):
    n = 200
    batch = simulate(Workload.generate(n, Trace(np.zeros(n)), Fixed(512), LogNormal(200, 1.5), seed=6), replica)
    assert bench_output_throughput(batch) == pytest.approx(batch.output_tokens.sum() / (batch.finish_s.max() - 0.0))


def test_decomposition_multiplies_and_shares_the_log_gap():
    d = decompose(4000.0, [GapFactor("mix", 0.8, "simulated"), GapFactor("hits", 1.25, "simulated"),
                           GapFactor("load", 0.5, "assumed")])
    assert d.explained == pytest.approx(2000.0)
    assert d.residual(1800.0) == pytest.approx(0.9)
    shares = d.shares()
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["load"] == pytest.approx(math.log(0.5) / math.log(0.5))  # mix and hits cancel


def test_bad_inputs_are_clear_errors(replica):
    with pytest.raises(ValueError, match="basis"):
        GapFactor("x", 0.5, "guessed")
    with pytest.raises(ValueError, match="positive"):
        GapFactor("x", 0.0, "assumed")
    with pytest.raises(TypeError, match="Result"):
        bench_output_throughput("a run")


def test_slo_feasible_rate_finds_the_threshold_of_a_monotone_attainment():
    from solutions.correctness_operations.benchmark_gap import slo_feasible_rate
    rate = slo_feasible_rate(lambda r: 1.0 if r <= 7.3 else 0.5, 1.0, 20.0, steps=12)
    assert 7.3 - 19 / 2**12 <= rate <= 7.3
    assert slo_feasible_rate(lambda r: 0.0, 1.0, 20.0) == 1.0
    with pytest.raises(ValueError, match="lo < hi"):
        slo_feasible_rate(lambda r: 1.0, 5.0, 2.0)
