"""Is a run in steady state, and what are its rates there?

A simulated run starts empty (the ramp), takes arrivals for a while, then serves what is left
after the last arrival (the drain). Rates over the whole span mix the three: a short run at a
load the replica cannot carry looks healthy because its queue has not had time to grow, and its
goodput is diluted by a drain in which nothing arrives. So the rates a design is judged by are
read over a *steady window*:

    method "arrivals, warm-up dropped": the window runs from `warmup` (default: a fifth of the
    arrival span) after the first arrival to the last arrival. Arrivals are still coming
    throughout, so the offered load is the workload's; the ramp, where the pool and the batch
    are still filling, is dropped; the drain, where completions no longer track arrivals, is
    excluded by construction.

Over the window (T seconds):
    throughput  completions in the window / T, and output tokens sampled in it / T
    goodput     completions in the window that met every SLO target / T (DistServe's definition)
    SLO attainment  the share of the requests that *arrived* in the window that met every target
                (each is followed to its finish, in the drain if need be: what those users saw)

Is it steady? Three trends over the window, fitted by least squares:
    backlog     requests in the system (arrived, not finished): if it grows by more than `tol`
                of the window's arrivals, completions do not keep up: the run is **overloaded**
                (the queue grows without bound; a longer run only makes it worse)
    queue wait  each arrival's wait for admission, against its arrival time: if the fitted rise
                over the window exceeds `wait_tol` times the window's mean wait (and a quarter of a
                mean lifetime, so that millisecond waits do not count), the waits are still
                climbing: not steady, and **overloaded** if the backlog is rising too. A marginal
                overload (rho ~1.02) grows its backlog by only ~3-5% of the arrivals of a long
                window, under `tol`, while every later arrival waits longer: this check catches it
    KV pool     occupancy still rising (or falling) by more than `kv_tol` of the pool: not steady
    length      the window must span `min_residences` mean request lifetimes and hold
                `min_arrivals` arrivals, or it is a transient, whatever the trends say

A short run still ramping up also shows a growing backlog, and can be flagged overloaded though a
long run at the same rate is steady (its growth stops once the system has filled): when the reasons
include "a transient" *or the pool's occupancy still moving*, run longer before trusting the overload
flag either way. The transient check compares the window with the *mean* request lifetime; with
long-tailed answers the system fills over its longest lifetimes, so a window several mean lifetimes
long can still be ramping and carry no "transient" reason (600 requests of log-normal answers, mean
3,000 tokens and cv 1, at a rate that 2,000 requests show steady: flagged overloaded, pool still filling).

The closed form to check a steady run against is Little's law on KV tokens (`kv_tokens_held`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solutions.serving.distributions import Distribution

METHOD = "arrivals, warm-up dropped"


@dataclass(frozen=True)
class SteadyWindow:
    """The steady window of a run, its rates, and whether the run is steady or overloaded."""

    method: str
    start_s: float
    end_s: float
    arrivals: int  # requests that arrived in the window
    completions: int  # requests that finished in the window
    arrival_rate: float  # req/s
    throughput_req_per_s: float
    output_tokens_per_s: float
    backlog_growth: float  # requests gained by the system over the window (fitted trend)
    queue_growth: float  # waiting requests gained over the window (fitted trend)
    wait_growth_s: float  # rise of the admission wait across the window's arrivals (fitted trend), seconds
    kv_trend: float  # pool fraction gained over the window (fitted trend)
    mean_kv_fraction: float  # time-average pool occupancy in the window
    kv_full_share: float  # share of the window with the pool >= 99% used
    mean_in_system: float  # time-average requests in the system
    mean_kv_tokens: float  # time-average KV blocks in use x block size
    ramp_share: float  # share of the run's span before the window
    drain_share: float  # share of the run's span after the last arrival
    overloaded: bool
    is_steady: bool
    reasons: tuple = ()
    requests: np.ndarray = field(default=None, repr=False)  # bool mask: arrived in the window
    goodput_req_per_s: float | None = None
    slo_attainment: float | None = None

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s

    @property
    def completion_ratio(self) -> float:
        """Completions over arrivals in the window (about 1 in steady state, below 1 overloaded)."""
        return self.completions / self.arrivals if self.arrivals else float("nan")

    def verdict(self) -> str:
        """One line: steady, overloaded, or a transient, and why."""
        state = "overloaded" if self.overloaded else ("steady" if self.is_steady else "not steady")
        why = f": {'; '.join(self.reasons)}" if self.reasons else ""
        return (f"{state} ({self.method}, {self.start_s:.0f}-{self.end_s:.0f} s; completions/arrivals "
                f"{self.completion_ratio:.2f}, pool {self.mean_kv_fraction:.0%} mean, {self.kv_full_share:.0%} of "
                f"the window >= 99% full; drain {self.drain_share:.0%} of the run){why}")

    def as_dict(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "requests"}
        out["reasons"] = list(self.reasons)
        out["completion_ratio"] = self.completion_ratio
        return out


def _slope(t: np.ndarray, y: np.ndarray) -> float:
    if t.size < 2 or np.ptp(t) == 0:
        return 0.0
    tc = t - t.mean()
    return float((tc * (y - y.mean())).sum() / (tc * tc).sum())


def _step_average(start, end, values, t0, t1) -> float:
    """Time average over [t0, t1] of a per-step value (0 between steps: an idle replica)."""
    overlap = np.clip(np.minimum(end, t1) - np.maximum(start, t0), 0, None)
    return float((overlap * values).sum() / (t1 - t0))


def steady_window(result, slo=None, *, warmup_s: float | None = None, warmup_fraction: float = 0.2,
                  tol: float = 0.05, kv_tol: float = 0.1, wait_tol: float = 1.0, min_residences: float = 3.0,
                  min_arrivals: int = 50, grid: int = 512) -> SteadyWindow:
    """The steady window of `result` (a `Result`), by the module's method; see its docstring."""
    if not 0 <= warmup_fraction < 1:
        raise ValueError(f"warmup_fraction must be in [0, 1), got {warmup_fraction!r}")
    for name, value in (("tol", tol), ("kv_tol", kv_tol), ("wait_tol", wait_tol), ("min_residences", min_residences)):
        if not value > 0:
            raise ValueError(f"{name} must be > 0, got {value!r}")
    arrival, finish = result.arrival_s, result.finish_s
    first, last = float(arrival.min()), float(arrival.max())
    span = float(finish.max()) - first
    if last <= first:
        raise ValueError("every request arrived at once (--request-rate inf?): there is no window with arrivals "
                         "still coming, so no steady state to read; the run is all ramp and drain (read it over the whole "
                         "run: summary(..., window=\"run\"))")
    warm = warmup_fraction * (last - first) if warmup_s is None else float(warmup_s)
    if not 0 <= warm < last - first:
        raise ValueError(f"warmup_s must be in [0, {last - first:.3g}) s (the arrival span), got {warm!r}")
    t0, t1 = first + warm, last
    T = t1 - t0
    inside = (arrival >= t0) & (arrival <= t1)
    done = (finish >= t0) & (finish <= t1)
    arrivals, completions = int(inside.sum()), int(done.sum())

    # trends: requests in the system and the pool, on a uniform grid over the window
    g = np.linspace(t0, t1, grid)
    in_system = np.searchsorted(np.sort(arrival), g, side="right") - np.searchsorted(np.sort(finish), g, side="right")
    backlog_growth = _slope(g, in_system) * T
    s = result.steps
    start, end = s["start_s"], s["end_s"]
    sel = (start >= t0) & (start <= t1)
    used = s["kv_blocks_used"] / result.kv_blocks
    kv_trend = _slope(start[sel], used[sel]) * T if sel.sum() > 1 else 0.0
    queue_growth = _slope(start[sel], s["waiting"][sel]) * T if sel.sum() > 1 else 0.0
    dt = np.clip(np.minimum(end, t1) - np.maximum(start, t0), 0, None)
    kv_full_share = float(dt[used >= 0.99].sum() / T)
    mean_kv_fraction = _step_average(start, end, used, t0, t1)
    block = result.kv_block_size
    mean_kv_tokens = _step_average(start, end, s["kv_blocks_used"] * block, t0, t1)
    # exact time average: each request's overlap of [arrival, finish] with the window
    mean_in_system = float(np.clip(np.minimum(finish, t1) - np.maximum(arrival, t0), 0, None).sum() / T)

    reasons = []
    overloaded = backlog_growth > tol * max(arrivals, 1)
    if overloaded:
        reasons.append(f"the backlog grows by {backlog_growth:.0f} requests over the window "
                       f"({backlog_growth / max(arrivals, 1):.0%} of its {arrivals} arrivals): completions do not keep up")
    if abs(kv_trend) > kv_tol:
        reasons.append(f"the pool's occupancy moves by {kv_trend:+.0%} of the pool over the window")
    residence = float((finish[inside] - arrival[inside]).mean()) if arrivals else float("inf")
    wait = result.admitted_s[inside] - arrival[inside]
    wait_growth = _slope(arrival[inside], wait) * T if arrivals > 1 else 0.0
    mean_wait = float(wait.mean()) if arrivals else 0.0
    if wait_growth > wait_tol * mean_wait and wait_growth > 0.25 * residence:
        reasons.append(f"the queue wait climbs by {wait_growth:.3g} s over the window (mean wait {mean_wait:.3g} s): "
                       "later arrivals wait longer, the queue has not settled")
        if backlog_growth > 0 and not overloaded:
            overloaded = True
            reasons.append(f"the backlog rises too (+{backlog_growth:.0f} requests): completions do not keep up")
    if T < min_residences * residence:
        reasons.append(f"the window ({T:.0f} s) is under {min_residences:g} mean request lifetimes "
                       f"({residence:.0f} s each): a transient")
    if arrivals < min_arrivals:
        reasons.append(f"only {arrivals} arrivals in the window (< {min_arrivals})")
    out = dict(method=METHOD, start_s=t0, end_s=t1, arrivals=arrivals, completions=completions,
               arrival_rate=arrivals / T, throughput_req_per_s=completions / T,
               output_tokens_per_s=float(result.tokens_between(t0, t1) / T),
               backlog_growth=backlog_growth, queue_growth=queue_growth, wait_growth_s=wait_growth, kv_trend=kv_trend,
               mean_kv_fraction=mean_kv_fraction, kv_full_share=kv_full_share, mean_in_system=mean_in_system,
               mean_kv_tokens=mean_kv_tokens, ramp_share=warm / span, drain_share=(float(finish.max()) - last) / span,
               overloaded=bool(overloaded), is_steady=not reasons, reasons=tuple(reasons), requests=inside)
    if slo is not None:
        met = result.meets(slo)
        out["goodput_req_per_s"] = float((met & done).sum() / T)
        out["slo_attainment"] = float(met[inside].mean()) if arrivals else float("nan")
    return SteadyWindow(**out)


def kv_tokens_held(arrival_rate: float, tpot_s: float, prompt: Distribution, output: Distribution) -> float:
    """Little's law on KV tokens: the mean KV (tokens) a steady stream of requests holds while they
    decode. A request of p prompt tokens and n outputs holds p + k tokens between its k-th and
    (k+1)-th token, for n - 1 gaps of one TPOT each: p(n - 1) + n(n - 1)/2 token-gaps. With p and n
    independent and `arrival_rate` requests/s,

        L_kv = lambda x TPOT x (E[p](E[n] - 1) + (E[n^2] - E[n]) / 2)  ~  lambda x TPOT x (E[p]E[n] + E[n^2]/2)

    The time a request spends queued (no KV) or prefilling (a short fraction of its life) is left
    out, so a run whose TTFT is a large share of its E2E holds a little more than this."""
    for name, value in (("arrival_rate", arrival_rate), ("tpot_s", tpot_s)):
        if not (isinstance(value, (int, float, np.floating)) and value > 0 and np.isfinite(value)):
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    for name, d in (("prompt", prompt), ("output", output)):
        if not isinstance(d, Distribution):
            raise TypeError(f"{name} must be a solutions.serving distribution (LogNormal, Empirical, ...), got {d!r}")
    en, en2 = output.mean, output.second_moment
    return float(arrival_rate * tpot_s * (prompt.mean * (en - 1) + (en2 - en) / 2))
