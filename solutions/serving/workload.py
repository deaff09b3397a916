"""Who arrives when, and what each request asks for.

Arrival processes (`Poisson`, `GammaArrivals`, `OnOff`, `Trace`) produce arrival times; a
`Workload` is the resulting table of requests: arrival time, prompt and output lengths, the
prompt tokens a prefix cache already holds, tenant and priority (carried through to the results
so metrics can be split per tenant), and, for single-server queueing checks, a service time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from solutions.serving.distributions import Distribution, _positive, as_tokens


class ArrivalProcess:
    rate: float  # long-run arrivals per second

    def times(self, n: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError


@dataclass(frozen=True)
class Poisson(ArrivalProcess):
    """Independent arrivals: exponential gaps with mean 1/rate."""

    rate: float

    def __post_init__(self):
        _positive(rate=self.rate)

    def times(self, n, rng):
        return np.cumsum(rng.exponential(1 / self.rate, n))


@dataclass(frozen=True)
class GammaArrivals(ArrivalProcess):
    """Renewal arrivals with gamma gaps: cv 1 is Poisson, cv > 1 is bursty, cv < 1 is smoother."""

    rate: float
    cv: float

    def __post_init__(self):
        _positive(rate=self.rate, cv=self.cv)

    def times(self, n, rng):
        shape = 1 / self.cv**2
        return np.cumsum(rng.gamma(shape, 1 / (self.rate * shape), n))


@dataclass(frozen=True)
class OnOff(ArrivalProcess):
    """Bursts: Poisson at `peak_rate` during `on_s`-second windows separated by `off_s` of silence.
    The long-run rate is peak_rate * on_s / (on_s + off_s)."""

    peak_rate: float
    on_s: float
    off_s: float

    def __post_init__(self):
        _positive(peak_rate=self.peak_rate, on_s=self.on_s, off_s=self.off_s)

    @property
    def rate(self) -> float:
        return self.peak_rate * self.on_s / (self.on_s + self.off_s)

    def times(self, n, rng):
        busy = np.cumsum(rng.exponential(1 / self.peak_rate, n))  # time spent in "on" windows
        windows = np.floor(busy / self.on_s)
        return busy + windows * self.off_s


class Trace(ArrivalProcess):
    """Replay recorded arrival times (seconds, non-decreasing)."""

    def __init__(self, times):
        times = np.asarray(times, dtype=float)
        if times.ndim != 1 or times.size == 0:
            raise ValueError("trace times must be a non-empty 1-D sequence")
        if not np.all(np.isfinite(times)) or np.any(times < 0):
            raise ValueError("trace times must be finite and non-negative")
        if np.any(np.diff(times) < 0):
            raise ValueError("trace times must be non-decreasing")
        self._times = times

    @property
    def rate(self) -> float:
        span = self._times[-1] - self._times[0]
        return (self._times.size - 1) / span if span > 0 else math.inf

    def times(self, n, rng):
        if n > self._times.size:
            raise ValueError(f"n={n} is more requests than the trace holds ({self._times.size})")
        return self._times[:n].copy()


def _int_column(name, values, n, minimum):
    a = np.asarray(values)
    if a.shape == ():
        a = np.full(n, a)
    if a.shape != (n,):
        raise ValueError(f"{name} must have one value per request ({n}), got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.integer):
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise ValueError(f"{name} must be whole numbers of tokens")
        a = a.astype(np.int64)
    if np.any(a < minimum):
        raise ValueError(f"{name} must be >= {minimum}, got min {a.min()}")
    return a.astype(np.int64)


@dataclass
class Workload:
    """A table of requests, one row each, in arrival order."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    prefix_hit_tokens: np.ndarray | None = None  # leading prompt tokens shared with its prefix group
    tenant: np.ndarray | None = None
    prefix_group: np.ndarray | None = None  # which shared prefix (a system prompt, a document); default 0
    priority: np.ndarray | None = None
    service_s: np.ndarray | None = None  # single-server mode only: each job's service time
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        a = np.asarray(self.arrival_s, dtype=float)
        if a.ndim != 1 or a.size == 0:
            raise ValueError("arrival_s must be a non-empty 1-D array")
        if not np.all(np.isfinite(a)) or np.any(a < 0):
            raise ValueError("arrival_s must be finite and non-negative")
        if np.any(np.diff(a) < 0):
            raise ValueError("arrival_s must be non-decreasing (requests in arrival order)")
        n = a.size
        self.arrival_s = a
        self.prompt_tokens = _int_column("prompt_tokens", self.prompt_tokens, n, 1)
        self.output_tokens = _int_column("output_tokens", self.output_tokens, n, 1)
        hits = 0 if self.prefix_hit_tokens is None else self.prefix_hit_tokens
        self.prefix_hit_tokens = _int_column("prefix_hit_tokens", hits, n, 0)
        if np.any(self.prefix_hit_tokens > self.prompt_tokens):
            raise ValueError("prefix_hit_tokens must not exceed prompt_tokens")
        self.prefix_group = _int_column("prefix_group", 0 if self.prefix_group is None else self.prefix_group, n, 0)
        self.tenant = np.zeros(n, np.int64) if self.tenant is None else np.asarray(self.tenant)
        self.priority = np.zeros(n, np.int64) if self.priority is None else np.asarray(self.priority)
        for name in ("tenant", "priority"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} must have one value per request ({n})")
        if self.service_s is not None:
            s = np.asarray(self.service_s, dtype=float)
            if s.shape != (n,) or not np.all(np.isfinite(s)) or np.any(s <= 0):
                raise ValueError("service_s must be one positive finite time per request")
            self.service_s = s

    def __len__(self) -> int:
        return self.arrival_s.size

    @classmethod
    def generate(cls, n: int, arrivals: ArrivalProcess, prompt: Distribution, output: Distribution,
                 *, prefix_hit: Distribution | float = 0.0, seed: int = 0, tenants: int = 1) -> "Workload":
        """Draw `n` requests: arrival gaps, then prompt and output lengths, from one seeded stream.
        `prefix_hit` is the fraction of each prompt (a number), or a distribution of tokens, that it
        shares with its tenant's other requests (a system prompt): a hit once the first of them has
        cached it, for as long as it stays in the pool. Tenants are drawn uniformly from `tenants`,
        and each tenant has its own shared prefix."""
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        if not isinstance(tenants, (int, np.integer)) or tenants < 1:
            raise ValueError(f"tenants must be a positive integer, got {tenants!r}")
        rng = np.random.default_rng(seed)
        t = arrivals.times(n, rng)
        p = as_tokens(prompt.sample(n, rng))
        o = as_tokens(output.sample(n, rng))
        if isinstance(prefix_hit, Distribution):
            hits = np.minimum(np.rint(prefix_hit.sample(n, rng)).astype(np.int64), p)
        else:
            if not (0.0 <= prefix_hit <= 1.0):
                raise ValueError(f"prefix_hit must be a fraction in [0, 1] or a Distribution, got {prefix_hit}")
            hits = np.floor(prefix_hit * p).astype(np.int64)
        tenant = rng.integers(0, tenants, n)
        meta = dict(arrivals=arrivals, prompt=prompt, output=output, seed=seed)
        return cls(t, p, o, hits, tenant=tenant, prefix_group=tenant, meta=meta)

    @classmethod
    def single_server(cls, n: int, arrivals: ArrivalProcess, service: Distribution, *, seed: int = 0) -> "Workload":
        """Jobs for the queueing checks: one token in, one token out, each with its own service time.
        Run them on `Replica.single_server()` to get a FCFS single-server queue (M/G/1 for
        Poisson arrivals)."""
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        rng = np.random.default_rng(seed)
        t = arrivals.times(n, rng)
        s = service.sample(n, rng)
        if np.any(s <= 0):
            raise ValueError("service times must be positive")
        return cls(t, 1, 1, service_s=s, meta=dict(arrivals=arrivals, service=service, seed=seed))
