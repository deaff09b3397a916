"""What a run produced, per request and per step, and the latency metrics users feel.

    TTFT   first token time - arrival: queueing + prefill (including any recompute) + the serving
           stack (HTTP, tokenising, detokenising: `Replica.serving_stack_s`), see `ttft_parts`
    TPOT   (finish - first token) / (output tokens - 1): the mean gap a request's user sees
    ITL    every gap between consecutive tokens of a request (its tail is what stutters)
    E2E    finish - arrival, serving stack included
    goodput  requests per second that met every SLO (DistServe's definition, arXiv:2401.09670)

Percentiles use numpy's default (linear interpolation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class SLO:
    """Latency targets a request must meet to count towards goodput (None: no target)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None

    def __post_init__(self):
        for name in ("ttft_s", "tpot_s", "e2e_s"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and value > 0):
                raise ValueError(f"{name} must be a positive number of seconds or None, got {value!r}")


@dataclass
class Result:
    """Per request: arrival_s, admitted_s, first_token_s, finish_s, preemptions, cached_tokens, and every token's
    time (`token_times(rid)`). Per step (`steps`): start_s, end_s, decode_tokens, decode_context
    (their cached tokens in total), prefill_tokens, seqs, kv_blocks_used, waiting, running."""

    name: str
    arrival_s: np.ndarray
    admitted_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    preemptions: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    tenant: np.ndarray
    token_offset: np.ndarray  # request i's tokens are token_s[token_offset[i]:token_offset[i + 1]]
    steps: dict
    kv_blocks: int
    area: float  # integral of the number in system over the run, from the engine's counters
    serving_stack_s: float = 0.0  # per request, outside the engine: added to TTFT and E2E
    cached_tokens: np.ndarray | None = None  # prompt tokens found in the prefix cache (last admission)
    evicted_blocks: int = 0  # cached prefix blocks evicted to make room
    kv_block_size: int = 16  # tokens per KV block
    # (request, first step, tokens) of each run of a request's consecutive sampled tokens, in token
    # order: `token_s` is built from them on first use (every token: tens of millions in a long run)
    token_segments: tuple | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_run(cls, workload, replica, sched, steps, area) -> "Result":
        steps = {k: np.asarray(v) for k, v in steps.items()}
        start, end = steps["start_s"], steps["end_s"]
        out = workload.output_tokens
        seg = np.array(sched.segments, dtype=np.int64).reshape(-1, 3)
        seg = seg[np.lexsort((seg[:, 1], seg[:, 0]))]
        rid, first, count = seg.T
        if not np.array_equal(np.bincount(rid, weights=count, minlength=len(out)).astype(np.int64), out):
            raise RuntimeError("token accounting broke: sampled tokens differ from output_tokens")
        return cls(
            name=replica.name,
            arrival_s=workload.arrival_s,
            admitted_s=start[np.array(sched.admitted_step)],
            first_token_s=end[np.array(sched.first_token_step)],
            finish_s=end[np.array(sched.finish_step)],
            preemptions=np.array(sched.preemptions),
            prompt_tokens=workload.prompt_tokens,
            output_tokens=out,
            tenant=workload.tenant,
            token_offset=np.concatenate([[0], np.cumsum(out)]),
            steps=steps,
            kv_blocks=replica.kv_pool.num_blocks,
            area=area,
            serving_stack_s=replica.serving_stack_s,
            cached_tokens=np.array(sched.hit_tokens, dtype=np.int64),
            evicted_blocks=sched.evicted_blocks,
            kv_block_size=replica.kv_pool.block_size,
            token_segments=(rid, first, count),
        )

    def subset(self, requests: np.ndarray) -> "Result":
        """The requests a boolean mask selects, as a Result of their own (one tenant's view, say): their
        per-request arrays and tokens; the steps and the KV pool stay the whole replica's, so its
        `steady()` is their steady window over the shared pool."""
        m = np.asarray(requests, bool)
        if m.shape != (len(self),):
            raise ValueError(f"requests must be a boolean mask with one entry per request ({len(self)})")
        rid, first, count = self.token_segments
        keep = m[rid]
        new_id = np.cumsum(m) - 1  # old request id -> its index in the subset
        per_request = {name: getattr(self, name)[m] for name in (
            "arrival_s", "admitted_s", "first_token_s", "finish_s", "preemptions", "prompt_tokens", "output_tokens",
            "tenant")}
        return replace(self, **per_request, token_offset=np.concatenate([[0], np.cumsum(self.output_tokens[m])]),
                       cached_tokens=None if self.cached_tokens is None else self.cached_tokens[m],
                       token_segments=(new_id[rid[keep]], first[keep], count[keep]))

    def tokens_between(self, t0: float, t1: float) -> int:
        """Tokens sampled at times in [t0, t1]: each run of a request's tokens overlaps the steps that
        end in the window (step ends rise with the step), counted without building `token_s`."""
        _, first, count = self.token_segments
        end = self.steps["end_s"]
        s0, s1 = np.searchsorted(end, t0, side="left"), np.searchsorted(end, t1, side="right")
        return int(np.clip(np.minimum(first + count, s1) - np.maximum(first, s0), 0, None).sum())

    @cached_property
    def token_s(self) -> np.ndarray:
        """Every token's time, request by request (request i's are token_s[token_offset[i]:token_offset[i + 1]])."""
        _, first, count = self.token_segments
        # token k of a run starting at token index o and step f is at step f + (k - o): one repeat
        return self.steps["end_s"][np.arange(count.sum()) + np.repeat(first - (np.cumsum(count) - count), count)]

    def __len__(self) -> int:
        return self.arrival_s.size

    # ---- per request -------------------------------------------------------------------
    def token_times(self, rid: int) -> np.ndarray:
        return self.token_s[self.token_offset[rid]:self.token_offset[rid + 1]]

    @property
    def ttft(self) -> np.ndarray:
        return self.first_token_s - self.arrival_s + self.serving_stack_s

    def ttft_parts(self) -> dict[str, np.ndarray]:
        """TTFT as three named terms that add up to it: waiting for admission, the steps from
        admission to the first token (prefill, chunks, any recompute), and the serving stack."""
        return {"queueing": self.admitted_s - self.arrival_s, "prefill": self.first_token_s - self.admitted_s,
                "serving stack": np.full(len(self), self.serving_stack_s)}

    @property
    def e2e(self) -> np.ndarray:
        return self.finish_s - self.arrival_s + self.serving_stack_s

    @property
    def queue_wait(self) -> np.ndarray:
        """Arrival to the start of the first step that ran any of its tokens."""
        return self.admitted_s - self.arrival_s

    @property
    def tpot(self) -> np.ndarray:
        """Per request; NaN for one-token outputs (no gap to average)."""
        gaps = self.output_tokens - 1
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(gaps > 0, (self.finish_s - self.first_token_s) / np.maximum(gaps, 1), np.nan)

    @property
    def itl(self) -> np.ndarray:
        """Every inter-token gap of every request (flattened)."""
        return self._itl(np.ones(len(self), bool))

    def _itl(self, requests: np.ndarray) -> np.ndarray:
        gaps = np.diff(self.token_s)  # gap j is from token j to token j + 1
        keep = np.repeat(np.asarray(requests, bool), self.output_tokens)[1:]  # token j + 1's request selected
        starts = self.token_offset[1:-1]  # a request's first token: the gap before it crosses requests
        keep[starts[(starts > 0) & (starts < keep.size + 1)] - 1] = False
        return gaps[keep]

    # ---- the run ----------------------------------------------------------------------
    @property
    def span_s(self) -> float:
        """First arrival to last finish."""
        return float(self.finish_s.max() - self.arrival_s.min())

    @property
    def output_tokens_per_s(self) -> float:
        return float(self.output_tokens.sum() / self.span_s)

    def goodput(self, slo: SLO) -> float:
        """Requests per second that met every target in `slo`."""
        return float(self.meets(slo).sum() / self.span_s)

    def meets(self, slo: SLO) -> np.ndarray:
        ok = np.ones(len(self), bool)
        if slo.ttft_s is not None:
            ok &= self.ttft <= slo.ttft_s
        if slo.tpot_s is not None:
            ok &= ~(self.tpot > slo.tpot_s)  # one-token outputs have no TPOT to miss
        if slo.e2e_s is not None:
            ok &= self.e2e <= slo.e2e_s
        return ok

    def queue_length(self) -> tuple[np.ndarray, np.ndarray]:
        """Waiting requests after each step's scheduling decision, against that step's start."""
        return self.steps["start_s"], self.steps["waiting"]

    def littles_law(self) -> dict:
        """L (time-average number in system, integrated from the engine's own counters) against
        lambda x W (from request timestamps), over a run that starts and ends empty."""
        span = self.span_s
        mean_in_system = self.area / span
        arrival_rate = len(self) / span
        mean_time = float((self.finish_s - self.arrival_s).mean())  # in the engine: what `area` counts
        return dict(L=mean_in_system, lam=arrival_rate, W=mean_time,
                    rel_error=abs(mean_in_system - arrival_rate * mean_time) / (arrival_rate * mean_time))

    # ---- steady state (solutions.serving.steady) ---------------------------------------------
    def steady(self, slo: SLO | None = None, **kwargs):
        """The run's steady window (`solutions.serving.steady.SteadyWindow`): rates over it
        (throughput, goodput and SLO attainment if `slo` is given), whether the run is steady or
        overloaded, and why. Keyword arguments go to `steady_window` (warm-up, tolerances)."""
        from solutions.serving.steady import steady_window
        return steady_window(self, slo, **kwargs)

    @property
    def is_steady(self) -> bool:
        """True if the default steady window shows no backlog or pool trend and is long enough."""
        return self.steady().is_steady

    @property
    def overloaded(self) -> bool:
        """True if requests accumulate over the default steady window: completions do not keep up."""
        return self.steady().overloaded

    def summary(self, slo: SLO | None = None, requests: np.ndarray | None = None, window: str = "steady") -> dict:
        """The headline numbers of a run (seconds, tokens per second), over all requests or over
        the boolean mask `requests` (one tenant, say). With `window="steady"` (the default) the rates
        (output tokens/s, goodput, SLO attainment) are read over the steady window
        (`solutions.serving.steady`), the latency percentiles are over the requests that arrived in
        it, and `out["steady"]` says whether the run was steady or overloaded, by which method, and
        why. With `window="run"` rates are per second of the whole run, ramp and drain included:
        what a benchmark that sends every request at once (`--request-rate inf`) reports, and the
        only reading such a run has (it has no steady window)."""
        if window not in ("run", "steady"):
            raise ValueError(f"window must be 'run' or 'steady', got {window!r}")
        if window == "steady":
            w = self.steady(slo)
            mask = w.requests if requests is None else (np.asarray(requests, bool) & w.requests)
            out = self.summary(None, mask, window="run")
            T = w.seconds
            finished = (self.finish_s >= w.start_s) & (self.finish_s <= w.end_s)
            sel = np.ones(len(self), bool) if requests is None else np.asarray(requests, bool)
            tokens = self.token_s[np.repeat(sel, self.output_tokens)]
            out["output_tokens_per_s"] = float(((tokens >= w.start_s) & (tokens <= w.end_s)).sum() / T)
            if slo is not None:
                met = self.meets(slo)
                out["goodput_req_per_s"] = float((met & finished & sel).sum() / T)
                out["slo_attainment"] = float(met[mask].mean())
            out["steady"] = dict(method=w.method, start_s=w.start_s, end_s=w.end_s, is_steady=w.is_steady,
                                 overloaded=w.overloaded, reasons=list(w.reasons), verdict=w.verdict())
            return out
        mask = np.ones(len(self), bool) if requests is None else np.asarray(requests, bool)
        if mask.shape != (len(self),) or not mask.any():
            raise ValueError("requests must be a boolean mask with one entry per request, selecting at least one")

        def pct(x):
            x = x[~np.isnan(x)]
            if x.size == 0:
                return dict(mean=math.nan, p50=math.nan, p90=math.nan, p99=math.nan)
            p50, p90, p99 = np.percentile(x, [50, 90, 99])
            return dict(mean=float(x.mean()), p50=float(p50), p90=float(p90), p99=float(p99))

        out = dict(requests=int(mask.sum()), steps=int(self.steps["end_s"].size), span_s=self.span_s,
                   output_tokens_per_s=float(self.output_tokens[mask].sum() / self.span_s),
                   ttft=pct(self.ttft[mask]),
                   ttft_parts_mean={k: float(v[mask].mean()) for k, v in self.ttft_parts().items()},
                   tpot=pct(self.tpot[mask]), itl=pct(self._itl(mask)),
                   e2e=pct(self.e2e[mask]), preempted_requests=int((self.preemptions[mask] > 0).sum()),
                   peak_kv_fraction=float(self.steps["kv_blocks_used"].max() / self.kv_blocks))
        if slo is not None:
            met = self.meets(slo)[mask]
            out["goodput_req_per_s"] = float(met.sum() / self.span_s)
            out["slo_attainment"] = float(met.mean())
        return out

    def by_tenant(self, slo: SLO | None = None, window: str = "steady") -> dict:
        """`summary` for each tenant, over `window`."""
        return {t.item() if hasattr(t, "item") else t: self.summary(slo, self.tenant == t, window=window)
                for t in np.unique(self.tenant)}
