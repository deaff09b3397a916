"""Admission from two coupled latency targets: the TPOT target caps the prefill chunk a step may
carry, the chunk caps prefill throughput, and throughput times the TTFT target is the backlog of
prompt tokens a new request may find ahead of it.

    chunk, rate = prefill_rate_under_tpot(step_model, batch=40, context=2100, tpot_s=0.03)
    rule = BacklogAdmission(prefill_tokens_per_s=rate, ttft_s=1.0)
    admitted = rule.admit(workload)            # one bool per request, in arrival order
    simulate(subset(workload, admitted), replica)

The rule runs at the front door (a router or gateway), before the engine: it keeps a fluid
estimate of the queued prefill tokens, drained at the prefill rate, and refuses a request whose
prompt would not be prefilled within the TTFT target behind that backlog.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solutions.serving.workload import Workload


def prefill_rate_under_tpot(step_model, batch: int, context: float, tpot_s: float,
                            prompt_cached: float = 0.0, granularity: int = 16) -> tuple[int, float]:
    """The largest prefill chunk (a multiple of `granularity` tokens) that a step of `batch`
    decodes at `context` cached tokens each can carry without the step exceeding `tpot_s`, and
    the prefill tokens per second that chunk sustains (chunk / step time)."""
    if not (isinstance(batch, (int, np.integer)) and batch >= 1):
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    if not (context >= 0 and tpot_s > 0 and prompt_cached >= 0):
        raise ValueError(f"need context >= 0, tpot_s > 0 and prompt_cached >= 0, got {context}, {tpot_s}, "
                         f"{prompt_cached}")

    def step(chunk):
        return step_model.mixed(batch, context, chunk, prompt_cached).seconds

    if step(granularity) > tpot_s:
        raise ValueError(f"even a {granularity}-token chunk makes the step {step(granularity) * 1e3:.1f} ms at batch "
                         f"{batch}: above the TPOT target of {tpot_s * 1e3:.1f} ms; the batch itself is too large")
    lo, hi = 1, 2
    while step(hi * granularity) <= tpot_s:  # the step grows with the chunk: double, then bisect
        lo, hi = hi, hi * 2
        if hi > 1 << 20:
            raise ValueError("the chunk is unbounded: the step model does not grow with prefill tokens")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if step(mid * granularity) <= tpot_s else (lo, mid)
    chunk = lo * granularity
    return chunk, chunk / step(chunk)


@dataclass(frozen=True)
class BacklogAdmission:
    """Admit a request if the prompt tokens queued ahead of it plus its own can be prefilled at
    `prefill_tokens_per_s` within `ttft_s`; the backlog estimate drains at that rate between
    arrivals and grows only by admitted prompts (a token bucket of depth rate x TTFT target)."""

    prefill_tokens_per_s: float
    ttft_s: float

    def __post_init__(self):
        for name in ("prefill_tokens_per_s", "ttft_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value > 0 and np.isfinite(value)):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")

    @property
    def max_backlog_tokens(self) -> float:
        return self.prefill_tokens_per_s * self.ttft_s

    def admit(self, workload: Workload) -> np.ndarray:
        """One bool per request: admitted (True) or refused at the door (False)."""
        if not isinstance(workload, Workload):
            raise TypeError(f"workload must be a Workload, got {type(workload).__name__}")
        rate, depth = self.prefill_tokens_per_s, self.max_backlog_tokens
        need = (workload.prompt_tokens - workload.prefix_hit_tokens).tolist()
        keep = np.zeros(len(workload), bool)
        backlog, last = 0.0, float(workload.arrival_s[0])
        for i, (t, tokens) in enumerate(zip(workload.arrival_s.tolist(), need)):
            backlog = max(0.0, backlog - rate * (t - last))
            last = t
            if backlog + tokens <= depth:
                keep[i] = True
                backlog += tokens
        return keep


def subset(workload: Workload, keep) -> Workload:
    """The requests of `workload` selected by the bool mask `keep`, in arrival order."""
    keep = np.asarray(keep, bool)
    if keep.shape != (len(workload),) or not keep.any():
        raise ValueError("keep must be a bool mask with one entry per request, selecting at least one")
    return Workload(workload.arrival_s[keep], workload.prompt_tokens[keep], workload.output_tokens[keep],
                    workload.prefix_hit_tokens[keep], tenant=workload.tenant[keep],
                    prefix_group=workload.prefix_group[keep], priority=workload.priority[keep],
                    service_s=None if workload.service_s is None else workload.service_s[keep],
                    meta=dict(workload.meta, subset_of=len(workload)))
