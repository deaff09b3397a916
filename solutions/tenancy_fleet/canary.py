"""How many requests a canary needs before its verdict means something.

A canary compares a new build's requests with the old build's. Both regressions worth catching
reduce to a rise in a rate:

- an error rate, p0 -> p1, directly;
- a latency quantile: if the canary's p99 moved up, more than 1% of its requests land above the
  *baseline's* p99. The test counts those exceedances, so a quantile shift is a rate rise from
  1 - q to `exceedance_after_shift(...)`, and how far that rate moves depends on the tail's shape.

    requests_needed(p0, p1, alpha=0.025, power=0.8, control_ratio=k)   canary requests (control k times more)
    power(n, p0, p1, alpha, control_ratio)                             probability the test fires
    exceedance_after_shift(samples, quantile, shift)                   rate above the old quantile
    simulated_power(n, p0, p1, alpha, trials, rng)                     the same test, counted by Monte Carlo

One-sided tests throughout: a canary gate only asks "is it worse?". Normal approximation to the
binomial (the textbook sample-size formula, e.g. Fleiss, Statistical Methods for Rates and
Proportions, 3rd ed., eq. 4.14); `simulated_power` checks it where counts are small.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

_N = NormalDist()


def _check_rates(p0: float, p1: float) -> None:
    for name, p in (("p0", p0), ("p1", p1)):
        if not 0 < p < 1:
            raise ValueError(f"{name} must lie strictly between 0 and 1, got {p}")
    if p1 <= p0:
        raise ValueError(f"the regression must raise the rate: p1 ({p1}) must exceed p0 ({p0})")


def _check_test(alpha: float, power: float | None, control_ratio: float) -> None:
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha (one-sided) must lie in (0, 0.5), got {alpha}")
    if power is not None and not 0.5 <= power < 1:
        raise ValueError(f"power must lie in [0.5, 1), got {power}")
    if not control_ratio > 0:
        raise ValueError(f"control_ratio must be positive (use math.inf for a known baseline), got {control_ratio}")


def _pooled(p0: float, p1: float, k: float) -> float:
    return p0 if math.isinf(k) else (p1 + k * p0) / (1 + k)


def requests_needed(p0: float, p1: float, *, alpha: float = 0.025, power: float = 0.8,
                    control_ratio: float = 1.0) -> int:
    """Canary requests for a one-sided two-proportion z-test of size `alpha` to flag a rise from p0
    (control) to p1 (canary) with probability `power`. The control arm has `control_ratio` times the
    canary's requests; math.inf means the baseline rate is known exactly (a huge control arm)."""
    _check_rates(p0, p1)
    _check_test(alpha, power, control_ratio)
    k = control_ratio
    pbar = _pooled(p0, p1, k)
    null_var = pbar * (1 - pbar) * (1 + (0 if math.isinf(k) else 1 / k))
    alt_var = p1 * (1 - p1) + (0 if math.isinf(k) else p0 * (1 - p0) / k)
    z = _N.inv_cdf(1 - alpha) * math.sqrt(null_var) + _N.inv_cdf(power) * math.sqrt(alt_var)
    return math.ceil((z / (p1 - p0)) ** 2)


def power(n: int, p0: float, p1: float, *, alpha: float = 0.025, control_ratio: float = 1.0) -> float:
    """Probability that the one-sided test on n canary requests flags a true rise from p0 to p1."""
    _check_rates(p0, p1)
    _check_test(alpha, None, control_ratio)
    if not n >= 1:
        raise ValueError(f"n must be at least 1, got {n}")
    k = control_ratio
    pbar = _pooled(p0, p1, k)
    null_sd = math.sqrt(pbar * (1 - pbar) * (1 + (0 if math.isinf(k) else 1 / k)) / n)
    alt_sd = math.sqrt((p1 * (1 - p1) + (0 if math.isinf(k) else p0 * (1 - p0) / k)) / n)
    return _N.cdf(((p1 - p0) - _N.inv_cdf(1 - alpha) * null_sd) / alt_sd)


def exceedance_after_shift(samples, quantile: float, shift: float) -> float:
    """Share of a canary's requests above the baseline's `quantile` when every latency is multiplied
    by (1 + shift): the rate the exceedance test sees. `samples` is the baseline's latency sample."""
    x = np.asarray(samples, float)
    if x.ndim != 1 or x.size < 100 or not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError("samples must be at least 100 finite, positive latencies")
    if not 0 < quantile < 1:
        raise ValueError(f"quantile must lie in (0, 1), got {quantile}")
    if not shift > -1:
        raise ValueError(f"shift must exceed -1, got {shift}")
    q = np.quantile(x, quantile)
    return float(np.mean(x * (1 + shift) > q))


def simulated_power(n: int, p0: float, p1: float, *, alpha: float = 0.025, control_ratio: float = 1.0,
                    trials: int = 20_000, rng: np.random.Generator) -> float:
    """The same one-sided z-test run on `trials` seeded binomial draws: the share that fire."""
    _check_rates(p0, p1)
    _check_test(alpha, None, control_ratio)
    if not (n >= 1 and trials >= 1):
        raise ValueError("n and trials must be at least 1")
    z_crit = _N.inv_cdf(1 - alpha)
    x1 = rng.binomial(n, p1, trials)
    if math.isinf(control_ratio):
        z = (x1 / n - p0) / math.sqrt(p0 * (1 - p0) / n)
    else:
        m = max(1, round(control_ratio * n))
        x0 = rng.binomial(m, p0, trials)
        pbar = (x0 + x1) / (n + m)
        se = np.sqrt(pbar * (1 - pbar) * (1 / n + 1 / m))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(se > 0, (x1 / n - x0 / m) / se, 0.0)
    return float(np.mean(z > z_crit))
