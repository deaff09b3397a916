"""Distributions of lengths and service times, each with the moments queueing theory needs.

A scenario names its distributions (`LogNormal(mean=1000, cv=1.5)`) instead of passing arrays,
so the same object both draws samples and states the mean and second moment that closed forms
such as Pollaczek-Khinchine use. Every `sample` takes a `numpy.random.Generator`: a run is a
function of its seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def _positive(**values):
    for name, value in values.items():
        if not (isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")


def _non_negative(**values):
    for name, value in values.items():
        if not (isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a non-negative finite number, got {value!r}")


class Distribution:
    """A non-negative random variable: draw samples, state E[X] and E[X^2]."""

    mean: float

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    @property
    def second_moment(self) -> float:
        raise NotImplementedError

    @property
    def scv(self) -> float:
        """Squared coefficient of variation, Var[X] / E[X]^2 (0 deterministic, 1 exponential)."""
        return self.second_moment / self.mean**2 - 1


@dataclass(frozen=True)
class Fixed(Distribution):
    value: float

    def __post_init__(self):
        _positive(value=self.value)

    @property
    def mean(self) -> float:
        return float(self.value)

    @property
    def second_moment(self) -> float:
        return float(self.value) ** 2

    def sample(self, n, rng):
        return np.full(n, float(self.value))


@dataclass(frozen=True)
class Exponential(Distribution):
    mean: float

    def __post_init__(self):
        _positive(mean=self.mean)

    @property
    def second_moment(self) -> float:
        return 2 * self.mean**2

    def sample(self, n, rng):
        return rng.exponential(self.mean, n)


@dataclass(frozen=True)
class _MeanAndCV(Distribution):
    """A distribution named by its mean and coefficient of variation: E[X^2] = mean^2 (1 + cv^2)."""

    mean: float
    cv: float

    def __post_init__(self):
        _positive(mean=self.mean, cv=self.cv)

    @property
    def second_moment(self) -> float:
        return self.mean**2 * (1 + self.cv**2)


@dataclass(frozen=True)
class Gamma(_MeanAndCV):
    """Gamma with a given mean and coefficient of variation (cv 1 is exponential; cv > 1 burstier)."""

    def sample(self, n, rng):
        shape = 1 / self.cv**2
        return rng.gamma(shape, self.mean / shape, n)


@dataclass(frozen=True)
class LogNormal(_MeanAndCV):
    """Log-normal with a given mean and coefficient of variation: the usual shape of prompt and
    output lengths in chat traces (a long right tail)."""

    def sample(self, n, rng):
        sigma2 = math.log1p(self.cv**2)
        mu = math.log(self.mean) - sigma2 / 2
        return rng.lognormal(mu, math.sqrt(sigma2), n)


@dataclass(frozen=True)
class Uniform(Distribution):
    low: float
    high: float

    def __post_init__(self):
        _non_negative(low=self.low)
        _positive(high=self.high)
        if self.high < self.low:
            raise ValueError(f"high must be >= low, got low={self.low}, high={self.high}")

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    @property
    def second_moment(self) -> float:
        return (self.low**2 + self.low * self.high + self.high**2) / 3

    def sample(self, n, rng):
        return rng.uniform(self.low, self.high, n)


class Empirical(Distribution):
    """Resample a trace's values with replacement (lengths from a real log, for instance)."""

    def __init__(self, values):
        values = np.asarray(values, dtype=float)
        if values.ndim != 1 or values.size == 0:
            raise ValueError("values must be a non-empty 1-D sequence")
        if not np.all(np.isfinite(values)) or np.any(values < 0):
            raise ValueError("values must be finite and non-negative")
        self.values = values

    @property
    def mean(self) -> float:
        return float(self.values.mean())

    @property
    def second_moment(self) -> float:
        return float(np.mean(self.values**2))

    def sample(self, n, rng):
        return rng.choice(self.values, n)

    def __repr__(self):
        return f"Empirical(n={self.values.size}, mean={self.mean:.4g})"


def as_tokens(x: np.ndarray) -> np.ndarray:
    """Round sampled lengths to whole tokens, at least one."""
    return np.maximum(1, np.rint(x)).astype(np.int64)
