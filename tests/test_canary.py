import math

import numpy as np
import pytest

from solutions.tenancy_fleet.canary import exceedance_after_shift, power, requests_needed, simulated_power


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
