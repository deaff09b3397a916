"""The dashboard over the simulator (q42): gauges, rates, quantiles and the Little's-law identity."""

import numpy as np
import pytest

from solutions.correctness_operations.dashboard import dashboard, event_quantile, event_rate, littles_law, preemption_times
from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_8B
from solutions.serving import LogNormal, Poisson, Replica, Workload, simulate


@pytest.fixture(scope="module")
def steady():
    work = Workload.generate(600, Poisson(8), LogNormal(800, 0.8), LogNormal(150, 0.8), seed=3)
    return simulate(work, Replica.of(LLAMA_3_1_8B, H100_SXM))


@pytest.fixture(scope="module")
def squeezed():
    work = Workload.generate(400, Poisson(12), LogNormal(800, 0.8), LogNormal(300, 0.8), seed=4)
    return simulate(work, Replica.of(LLAMA_3_1_8B, H100_SXM, kv_blocks=900))


def test_running_gauge_equals_rate_of_inference_time_sum_without_preemption(steady):
    assert steady.preemptions.sum() == 0
    law = littles_law(steady)
    assert law["running"] == pytest.approx(law["lambda_w_running"], rel=1e-9)


def test_preempted_time_moves_from_the_running_gauge_to_the_waiting_gauge(squeezed):
    assert squeezed.preemptions.sum() > 0
    law = littles_law(squeezed)
    assert law["running"] < law["lambda_w_running"] * 0.999     # preempted requests wait, counted as inference time
    assert law["waiting"] > law["lambda_w_waiting"]
    assert law["in_system"] == pytest.approx(law["lambda_w_total"], rel=0.02)


def test_panels_count_what_happened(steady, squeezed):
    board = dashboard(steady, window_s=5.0)
    widths = np.diff(board.edges)
    assert (board.arrivals_per_s * widths).sum() == pytest.approx(len(steady))
    assert (board.prompt_tokens_per_s * widths).sum() == pytest.approx(steady.prompt_tokens.sum())
    assert np.all((board.kv_usage >= 0) & (board.kv_usage <= 1))
    assert np.nanmax(board.ttft_p99) <= steady.ttft.max() + 1e-12
    assert preemption_times(squeezed).size == squeezed.preemptions.sum()


def test_rates_and_quantiles_on_known_events():
    edges = np.array([0.0, 10.0, 20.0])
    times = np.array([1.0, 2.0, 15.0])
    assert np.allclose(event_rate(times, edges), [0.2, 0.1])
    q = event_quantile(times, np.array([1.0, 3.0, 7.0]), edges, 0.5)
    assert q[0] == pytest.approx(2.0) and q[1] == pytest.approx(7.0)
    assert np.isnan(event_quantile(np.array([1.0]), np.array([1.0]), edges, 0.5)[1])


def test_bad_arguments_are_clear_errors(steady):
    with pytest.raises(ValueError, match="window_s"):
        dashboard(steady, window_s=0)
    with pytest.raises(TypeError, match="Result"):
        dashboard("not a run")
