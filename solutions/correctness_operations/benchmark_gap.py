"""From a benchmark's tokens/s to production's: the measures, and a gap split into named factors.

A benchmark and a production dashboard can both say "output tokens per second per GPU" and
disagree by 2x while both are right: they measure different workloads at different loads over
different windows. This module holds the measures the q40 answer compares and the bookkeeping of
the decomposition:

    bench_output_throughput(result)    what `vllm bench serve` prints as output token throughput:
                                       all output tokens / (first request sent to last one done)
    slo_feasible_rate(attainment_at, lo, hi)   the highest load that still meets an SLO (bisection)
    GapFactor, decompose(...)          named multiplicative factors, their product, each one's
                                       share of the log-gap (order matters; say which order)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solutions.serving import Result


def bench_output_throughput(result: Result) -> float:
    """Output tokens over the whole run, first arrival to last finish (the bench-serve definition)."""
    if not isinstance(result, Result):
        raise TypeError(f"result must be a solutions.serving.Result, got {type(result).__name__}")
    return result.output_tokens_per_s


@dataclass(frozen=True)
class GapFactor:
    name: str
    factor: float  # multiplies throughput: < 1 dilutes, > 1 helps
    basis: str  # "simulated", "assumed", "measured" or "given" (a figure the question states): how it was obtained

    def __post_init__(self):
        if not (isinstance(self.factor, (int, float)) and self.factor > 0 and math.isfinite(self.factor)):
            raise ValueError(f"factor {self.name!r} must be a positive finite number, got {self.factor!r}")
        if self.basis not in ("simulated", "assumed", "measured", "given"):
            raise ValueError(f"basis of {self.name!r} must be simulated, assumed, measured or given, got {self.basis!r}")


@dataclass(frozen=True)
class Decomposition:
    start: float  # the benchmark's number
    factors: tuple[GapFactor, ...]

    @property
    def explained(self) -> float:
        """The production number the factors predict from the benchmark's."""
        return self.start * math.prod(f.factor for f in self.factors)

    def residual(self, observed: float) -> float:
        """What the factors leave unexplained: observed / predicted (1 = fully explained)."""
        if observed <= 0:
            raise ValueError(f"observed throughput must be positive, got {observed}")
        return observed / self.explained

    def shares(self) -> dict[str, float]:
        """Each factor's share of the total log change (signed: helping factors are negative
        shares of a net loss). Shares depend on the order the factors were applied in."""
        total = sum(math.log(f.factor) for f in self.factors)
        if total == 0:
            raise ValueError("the factors cancel exactly: no gap to share out")
        return {f.name: math.log(f.factor) / total for f in self.factors}


def decompose(start: float, factors) -> Decomposition:
    if not (start > 0 and math.isfinite(start)):
        raise ValueError(f"start must be a positive throughput, got {start}")
    factors = tuple(factors)
    if not factors or not all(isinstance(f, GapFactor) for f in factors):
        raise ValueError("factors must be a non-empty sequence of GapFactor")
    return Decomposition(float(start), factors)



def slo_feasible_rate(attainment_at, lo: float, hi: float, *, target: float = 0.99, steps: int = 5) -> float:
    """Highest arrival rate (requests/s) in [lo, hi] whose SLO attainment stays >= `target`, by
    bisection on `attainment_at(rate) -> fraction of requests meeting the SLO` (a simulation).
    Returns `lo` if even `lo` fails; resolution (hi - lo) / 2**steps."""
    if not (0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"need 0 < lo < hi, got lo={lo}, hi={hi}")
    if not 0 < target <= 1:
        raise ValueError(f"target must lie in (0, 1], got {target}")
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    for _ in range(steps):
        mid = (lo + hi) / 2
        if attainment_at(mid) >= target:
            lo = mid
        else:
            hi = mid
    return lo
