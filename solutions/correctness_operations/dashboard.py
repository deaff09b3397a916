"""A serving dashboard computed from a simulator run, the way Prometheus would see it.

vLLM exports three kinds of series: gauges sampled from the scheduler's state (requests running
and waiting, KV-cache usage), counters (tokens, preemptions, prefix-cache queries and hits, in
tokens) and histograms observed at events (time to first token when the first token appears,
every inter-token gap as it happens, a request's queue and inference times when it finishes). A
dashboard reads them over windows: a gauge's time average, a counter's rate, a histogram's
quantiles or the rate of its `_sum`. `dashboard(result, window_s)` turns a
`solutions.serving.Result` into those eight panels, and `littles_law` checks the one identity
two of them must satisfy: the running gauge equals the completion rate times the time a request
spends running, i.e. rate(inference_time_sum).

The simulator records how many times each request was preempted, not when; `preemption_times`
places each preemption at the start of one of the request's longest token gaps (a preempted
request stops producing tokens until it is recomputed), which is exact for decode-phase
preemptions and approximate for requests preempted before their first token.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solutions.serving import Result


def _check(result: Result, window_s: float) -> None:
    if not isinstance(result, Result):
        raise TypeError(f"result must be a solutions.serving.Result, got {type(result).__name__}")
    if not (isinstance(window_s, (int, float)) and window_s > 0):
        raise ValueError(f"window_s must be a positive number of seconds, got {window_s!r}")


def window_edges(result: Result, window_s: float) -> np.ndarray:
    """Window boundaries from time 0 to the end of the run (the last window may be partial)."""
    _check(result, window_s)
    end = float(max(result.finish_s.max(), result.steps["end_s"].max()))
    return np.arange(0.0, end + window_s, window_s)


def gauge_mean(result: Result, key: str, edges: np.ndarray) -> np.ndarray:
    """Time average of a per-step gauge (`running`, `waiting`, `kv_blocks_used`) in each window:
    constant over each step, zero while the engine is idle between steps."""
    steps = result.steps
    start, end = steps["start_s"].astype(float), steps["end_s"].astype(float)
    value = steps[key].astype(float)
    area_end = np.cumsum(value * (end - start))
    area_start = area_end - value * (end - start)
    t = np.empty(2 * start.size)
    t[0::2], t[1::2] = start, end
    area = np.empty_like(t)
    area[0::2], area[1::2] = area_start, area_end
    cumulative = np.interp(edges, t, area, left=0.0, right=area[-1])
    return np.diff(cumulative) / np.diff(edges)


def event_rate(times: np.ndarray, edges: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """A counter's rate: events (or their weights) per second in each window."""
    counts, _ = np.histogram(times, bins=edges, weights=weights)
    return counts / np.diff(edges)


def event_quantile(times: np.ndarray, values: np.ndarray, edges: np.ndarray, q: float) -> np.ndarray:
    """Quantile `q` (0..1) of the values observed in each window; NaN where nothing was observed.
    (Prometheus interpolates inside histogram buckets; exact quantiles keep the argument clean.)"""
    which = np.digitize(times, edges) - 1
    out = np.full(edges.size - 1, np.nan)
    order = np.argsort(which, kind="stable")
    which, values = which[order], values[order]
    bounds = np.searchsorted(which, np.arange(edges.size))
    for w in range(edges.size - 1):
        chunk = values[bounds[w]:bounds[w + 1]]
        if chunk.size:
            out[w] = np.quantile(chunk, q)
    return out


def inter_token_gaps(result: Result) -> tuple[np.ndarray, np.ndarray]:
    """(time each gap ends, gap length) for every inter-token gap of every request."""
    owner = np.repeat(np.arange(len(result)), result.output_tokens)
    same = owner[1:] == owner[:-1]
    gaps = np.diff(result.token_s)
    return result.token_s[1:][same], gaps[same]


def preemption_times(result: Result) -> np.ndarray:
    """Times of the preemptions, reconstructed from token timestamps (see the module docstring)."""
    times = []
    for rid in np.flatnonzero(result.preemptions > 0):
        k = int(result.preemptions[rid])
        tokens = result.token_times(int(rid))
        if tokens.size >= k + 1:
            longest = np.argsort(np.diff(tokens), kind="stable")[-k:]
            times.extend(tokens[longest].tolist())
        else:  # preempted before it produced enough tokens: place it at admission
            times.extend([float(result.admitted_s[rid])] * k)
    return np.sort(np.array(times, dtype=float))


@dataclass(frozen=True)
class Dashboard:
    """The eight panels, one value per window (`edges` has one more entry than each series)."""

    edges: np.ndarray
    arrivals_per_s: np.ndarray            # 1 demand: requests arriving (load balancer)
    prompt_tokens_per_s: np.ndarray       # 1 demand: prompt tokens arriving
    waiting: np.ndarray                   # 2 vllm:num_requests_waiting, time average
    queue_time_rate: np.ndarray           # 2 rate(vllm:request_queue_time_seconds_sum)
    running: np.ndarray                   # 3 vllm:num_requests_running, time average
    inference_time_rate: np.ndarray       # 3 rate(vllm:request_inference_time_seconds_sum)
    kv_usage: np.ndarray                  # 4 vllm:kv_cache_usage_perc (a fraction), time average
    preemptions_per_s: np.ndarray         # 5 rate(vllm:num_preemptions_total)
    ttft_p50: np.ndarray                  # 6 vllm:time_to_first_token_seconds quantiles
    ttft_p99: np.ndarray
    itl_p50: np.ndarray                   # 7 inter-token gaps (vllm:time_per_output_token_seconds)
    itl_p99: np.ndarray
    prefix_hit_rate: np.ndarray           # 8 rate(prefix_cache_hits) / rate(prefix_cache_queries)
    prefill_tokens_per_s: np.ndarray      # tokens the engine actually prefilled (computed, not cached)

    @property
    def centres(self) -> np.ndarray:
        return (self.edges[:-1] + self.edges[1:]) / 2


def dashboard(result: Result, window_s: float = 10.0) -> Dashboard:
    """The eight panels of a run, in windows of `window_s` seconds."""
    edges = window_edges(result, window_s)
    cached = result.cached_tokens if result.cached_tokens is not None else np.zeros(len(result), np.int64)
    gap_end, gap = inter_token_gaps(result)
    with np.errstate(invalid="ignore", divide="ignore"):
        queries = event_rate(result.admitted_s, edges, result.prompt_tokens.astype(float))
        hits = event_rate(result.admitted_s, edges, cached.astype(float))
        hit_rate = np.where(queries > 0, hits / queries, np.nan)
    return Dashboard(
        edges=edges,
        arrivals_per_s=event_rate(result.arrival_s, edges),
        prompt_tokens_per_s=event_rate(result.arrival_s, edges, result.prompt_tokens.astype(float)),
        waiting=gauge_mean(result, "waiting", edges),
        queue_time_rate=event_rate(result.finish_s, edges, result.admitted_s - result.arrival_s),
        running=gauge_mean(result, "running", edges),
        inference_time_rate=event_rate(result.finish_s, edges, result.finish_s - result.admitted_s),
        kv_usage=gauge_mean(result, "kv_blocks_used", edges) / result.kv_blocks,
        preemptions_per_s=event_rate(preemption_times(result), edges),
        ttft_p50=event_quantile(result.first_token_s, result.ttft, edges, 0.5),
        ttft_p99=event_quantile(result.first_token_s, result.ttft, edges, 0.99),
        itl_p50=event_quantile(gap_end, gap, edges, 0.5),
        itl_p99=event_quantile(gap_end, gap, edges, 0.99),
        prefix_hit_rate=hit_rate,
        prefill_tokens_per_s=event_rate(result.steps["end_s"], edges, result.steps["prefill_tokens"].astype(float)),
    )


def littles_law(result: Result) -> dict:
    """Over the whole run: the time-averaged running and waiting gauges against the completion
    side, (requests finished / span) x mean time running or waiting. Running time is counted as
    vLLM's histogram counts it (first scheduled to last token, preemptions included), so a
    preempted request sitting in the waiting queue is on the right-hand side but not in the
    running gauge: the gap measures time spent preempted."""
    span = float(max(result.finish_s.max(), result.steps["end_s"].max()))
    edges = np.array([0.0, span])
    running = float(gauge_mean(result, "running", edges)[0])
    waiting = float(gauge_mean(result, "waiting", edges)[0])
    inference = float((result.finish_s - result.admitted_s).sum() / span)
    queue = float((result.admitted_s - result.arrival_s).sum() / span)
    return dict(running=running, lambda_w_running=inference, waiting=waiting, lambda_w_waiting=queue,
                in_system=running + waiting, lambda_w_total=inference + queue)
