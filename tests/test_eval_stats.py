"""Benchmark statistics for q14, pinned to textbook values and to simulation."""

import math

import numpy as np
import pytest

from solutions.correctness_operations.eval_stats import detectable_difference, mcnemar, two_proportion_z, wilson_interval


def test_wilson_interval_matches_the_textbook_example():
    # Agresti & Coull (1998), or any calculator: 81 of 263 at 95% -> (0.2553, 0.3662)
    lo, hi = wilson_interval(81, 263)
    assert lo == pytest.approx(0.2553, abs=1e-4) and hi == pytest.approx(0.3662, abs=1e-4)
    lo, hi = wilson_interval(0, 10)
    assert lo == pytest.approx(0.0, abs=1e-12) and 0 < hi < 0.35


def test_mcnemar_exact_p_value_is_the_binomial_tail():
    # b=10, c=2: P(X <= 2 | Bin(12, 1/2)) = (1 + 12 + 66) / 4096; two-sided doubles it
    assert mcnemar(10, 2).p_value == pytest.approx(2 * 79 / 4096, rel=1e-12)
    assert mcnemar(5, 5).p_value == 1.0 and mcnemar(0, 0).p_value == 1.0
    assert mcnemar(30, 10).z == pytest.approx(20 / math.sqrt(40))


def test_detectable_difference_has_the_stated_power_in_simulation():
    n, d = 1319, 0.06
    delta = detectable_difference(n, discordant=d)
    rng = np.random.default_rng(0)
    m = rng.binomial(n, d, 20_000)               # discordant items per simulated evaluation
    b = rng.binomial(m, 0.5 + delta / (2 * d))   # of which A-right-B-wrong, for a true gap delta
    z = (2 * b - m) / np.sqrt(m)
    assert (np.abs(z) > 1.96).mean() == pytest.approx(0.8, abs=0.02)


def test_unpaired_test_and_the_paired_test_disagree_on_the_same_drop():
    # 1,319 items, 84% vs 83%: unpaired z is small; with only 3% of items flipping the pair is significant
    assert abs(two_proportion_z(1108, 1095, 1319)) < 1
    assert mcnemar(26, 13).p_value < 0.06


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="exceed"):
        wilson_interval(11, 10)
    with pytest.raises(ValueError, match="exactly one"):
        detectable_difference(100)
    with pytest.raises(ValueError, match="non-negative integer"):
        mcnemar(-1, 2)


def test_paired_interval_covers_the_true_difference_at_its_confidence():
    from solutions.correctness_operations.eval_stats import paired_difference_interval
    rng = np.random.default_rng(1)
    n, d, delta = 1319, 0.06, 0.01
    cover = 0
    for _ in range(2000):
        m = rng.binomial(n, d)
        b = rng.binomial(m, 0.5 + delta / (2 * d))
        lo, hi = paired_difference_interval(int(b), int(m - b), n)
        cover += lo <= delta <= hi
    assert cover / 2000 == pytest.approx(0.95, abs=0.015)
