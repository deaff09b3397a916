import math

import numpy as np
import pytest

from solutions.tenancy_fleet.canary import (exact_power, exact_requests_needed, exceedance_after_shift, power, requests_needed,
                              simulated_power)


def test_textbook_sample_size():
    # Equal arms, 10% vs 20%, one-sided 0.025, power 0.8: the classic answer is 199 per arm
    # (Fleiss eq. 4.14 without continuity correction).
    assert requests_needed(0.10, 0.20, alpha=0.025, power=0.8) == 199


def test_power_at_the_required_n_is_the_target():
    for p0, p1, k in ((0.001, 0.002, 1.0), (0.01, 0.013, math.inf), (0.05, 0.08, 4.0)):
        n = requests_needed(p0, p1, power=0.9, control_ratio=k)
        assert 0.9 <= power(n, p0, p1, control_ratio=k) < power(n + max(1, n // 50), p0, p1, control_ratio=k)


def test_a_known_baseline_needs_fewer_canary_requests():
    equal = requests_needed(0.001, 0.002)
    known = requests_needed(0.001, 0.002, control_ratio=math.inf)
    assert known < requests_needed(0.001, 0.002, control_ratio=10) < equal


def test_simulation_agrees_with_the_formula():
    rng = np.random.default_rng(1)
    n = requests_needed(0.01, 0.02, control_ratio=1.0)
    assert simulated_power(n, 0.01, 0.02, trials=20_000, rng=rng) == pytest.approx(0.8, abs=0.02)
    # and under no regression the test fires about alpha of the time
    assert simulated_power(n, 0.01, 0.0100001, trials=40_000, rng=rng) == pytest.approx(0.025, abs=0.01)


def _exact_rule_by_monte_carlo(n, p0, p1, k, trials, rng):
    """The exact conditional test run on sampled counts: P(Binomial(T, n/(n+m)) >= x1) <= alpha,
    the tail summed directly from the pmf (independent of the module's vectorised tables)."""
    m = round(k * n)
    x1, x0 = rng.binomial(n, p1, trials), rng.binomial(m, p0, trials)
    pi = n / (n + m)
    fired = 0
    for a, b in zip(x1, x0):
        t = int(a + b)
        tail = sum(math.comb(t, j) * pi**j * (1 - pi) ** (t - j) for j in range(int(a), t + 1))
        fired += tail <= 0.025
    return fired / trials


@pytest.mark.parametrize("n, p0, p1, k", [(3000, 0.002, 0.004, 24.0), (800, 0.01, 0.02, 1.0)])
def test_exact_power_matches_the_exact_rule_run_on_samples(n, p0, p1, k):
    rng = np.random.default_rng(7)
    assert exact_power(n, p0, p1, control_ratio=k) == pytest.approx(
        _exact_rule_by_monte_carlo(n, p0, p1, k, 4000, rng), abs=0.025)


def test_the_exact_test_holds_alpha_where_the_z_test_does_not():
    n = requests_needed(0.001, 0.002, control_ratio=24)        # ~10 expected errors
    assert exact_power(n, 0.001, 0.001, control_ratio=24) <= 0.025
    rng = np.random.default_rng(3)
    assert simulated_power(n, 0.001, 0.001 * 1.0000001, control_ratio=24, trials=20_000, rng=rng) > 0.03


def test_exact_requests_needed_is_the_first_grid_point_that_reaches_the_power():
    n = exact_requests_needed(0.001, 0.002, control_ratio=24, step=100)
    assert n % 100 == 0
    assert exact_power(n, 0.001, 0.002, control_ratio=24) >= 0.8 > exact_power(n - 100, 0.001, 0.002, control_ratio=24)
    assert n > requests_needed(0.001, 0.002, control_ratio=24)  # the conservative exact test needs more


def test_exact_power_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="finite control"):
        exact_power(100, 0.01, 0.02, control_ratio=math.inf)
    with pytest.raises(ValueError, match="p0 <= p1"):
        exact_power(100, 0.02, 0.01)
    with pytest.raises(ValueError, match="step must be"):
        exact_requests_needed(0.01, 0.02, step=0)


def test_exceedance_of_a_pareto_tail_rises_by_the_tail_index():
    rng = np.random.default_rng(2)
    x = rng.pareto(3.0, 400_000) + 1.0  # survival x^-3
    assert exceedance_after_shift(x, 0.99, 0.1) == pytest.approx(0.01 * 1.1 ** 3, rel=0.05)
    assert exceedance_after_shift(x, 0.99, 0.0) == pytest.approx(0.01, rel=0.02)


@pytest.mark.parametrize("call", [
    lambda: requests_needed(0.002, 0.001),
    lambda: requests_needed(0.0, 0.1),
    lambda: requests_needed(0.1, 0.2, alpha=0.7),
    lambda: requests_needed(0.1, 0.2, control_ratio=0),
    lambda: power(0, 0.1, 0.2),
    lambda: exceedance_after_shift([1.0, 2.0], 0.99, 0.1),
])
def test_bad_input_is_a_clear_error(call):
    with pytest.raises(ValueError):
        call()
