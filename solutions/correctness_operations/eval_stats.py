"""Is a benchmark drop noise or a regression? Intervals and paired tests on the same items.

Two models answered the same n items. Their accuracies are two binomial proportions, but they
are not independent: an item one model finds easy the other usually does too. The paired view
counts only the discordant items, b (first right, second wrong) and c (the reverse); the
difference in accuracy is (b - c) / n and, if the models are equally good, b and c are two
halves of b + c fair coin flips (McNemar's test). That makes the paired test far more sensitive
than comparing two confidence intervals, and how much more depends on how many items flip.

    wilson_interval(correct, n)          confidence interval of one accuracy
    two_proportion_z(k1, k2, n)          the unpaired test (treats the two runs as independent)
    mcnemar(b, c)                        the paired test: exact p-value and z
    paired_difference_interval(b, c, n)  confidence interval of the accuracy difference on the same items
    detectable_difference(n, ...)        smallest drop a test of size alpha finds with the given power
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

_STANDARD_NORMAL = NormalDist()


def _check_count(name: str, value, upper: int | None = None) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if upper is not None and value > upper:
        raise ValueError(f"{name} ({value}) cannot exceed n ({upper})")


def _z(probability: float) -> float:
    return _STANDARD_NORMAL.inv_cdf(probability)


def wilson_interval(correct: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for an accuracy of correct / n (better than p ± z·se near 0 or 1)."""
    _check_count("n", n)
    if n == 0:
        raise ValueError("n must be positive")
    _check_count("correct", correct, n)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    z = _z(0.5 + confidence / 2)
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def two_proportion_z(correct_a: int, correct_b: int, n: int) -> float:
    """z statistic of accuracy A minus accuracy B, as if the runs were on independent items."""
    _check_count("n", n)
    _check_count("correct_a", correct_a, n)
    _check_count("correct_b", correct_b, n)
    pooled = (correct_a + correct_b) / (2 * n)
    se = math.sqrt(2 * pooled * (1 - pooled) / n)
    return (correct_a - correct_b) / n / se if se > 0 else 0.0


@dataclass(frozen=True)
class McNemar:
    b: int  # items model A got right and model B got wrong
    c: int  # items model B got right and model A got wrong
    z: float  # (b - c) / sqrt(b + c): the normal approximation
    p_value: float  # exact two-sided: b ~ Binomial(b + c, 1/2) under "equally good"


def mcnemar(b: int, c: int) -> McNemar:
    """McNemar's paired test on the discordant counts (exact binomial p-value, two-sided)."""
    _check_count("b", b)
    _check_count("c", c)
    m = b + c
    if m == 0:
        return McNemar(b, c, 0.0, 1.0)
    k = min(b, c)
    log_half = m * math.log(0.5)
    tail = sum(math.exp(math.lgamma(m + 1) - math.lgamma(i + 1) - math.lgamma(m - i + 1) + log_half)
               for i in range(k + 1))
    return McNemar(b, c, (b - c) / math.sqrt(m), min(1.0, 2 * tail))


def detectable_difference(n: int, *, accuracy: float | None = None, discordant: float | None = None,
                          alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true accuracy difference a two-sided test of size `alpha` detects with probability
    `power` on n items. Give `accuracy` for the unpaired test (two independent proportions near
    that accuracy) or `discordant` (the share of items whose correctness differs between the two
    models) for the paired test. Normal approximation."""
    _check_count("n", n)
    if n == 0:
        raise ValueError("n must be positive")
    if (accuracy is None) == (discordant is None):
        raise ValueError("give exactly one of accuracy= (unpaired) or discordant= (paired)")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError("alpha and power must lie in (0, 1)")
    zz = _z(1 - alpha / 2) + _z(power)
    if accuracy is not None:
        if not 0 <= accuracy <= 1:
            raise ValueError(f"accuracy must lie in [0, 1], got {accuracy}")
        return zz * math.sqrt(2 * accuracy * (1 - accuracy) / n)
    if not 0 <= discordant <= 1:
        raise ValueError(f"discordant must lie in [0, 1], got {discordant}")
    return zz * math.sqrt(discordant / n)


def paired_difference_interval(b: int, c: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Confidence interval of accuracy A minus accuracy B on the same n items, from the
    discordant counts (Wald interval of the paired difference; fine when b + c is not tiny)."""
    _check_count("n", n)
    if n == 0:
        raise ValueError("n must be positive")
    _check_count("b", b, n)
    _check_count("c", c, n - b)
    diff = (b - c) / n
    se = math.sqrt(max((b + c) / n - diff * diff, 0.0) / n)
    z = _z(0.5 + confidence / 2)
    return diff - z * se, diff + z * se
