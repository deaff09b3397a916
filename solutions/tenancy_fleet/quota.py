"""Tenant quotas in the resources a request actually consumes, and a gateway that enforces them.

A requests-per-minute limit prices a 128K-token prompt like a 200-token chat turn. What a request
really takes from a replica is GPU time (its prefill, whose attention grows with the square of the
prompt, and its share of every decode step it sits in) and KV memory for as long as it is resident.
`price` turns one request into those numbers with the kit's step model; `token_bucket` admits a
tenant's requests no faster than a budget of any such cost.

    price(step_model, prompt, output, decode_batch=64, pool_tokens=...)   -> Price
    token_bucket(arrival_s, cost, rate, burst)                            -> admit times
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solutions.step_model import StepModel


@dataclass(frozen=True)
class Price:
    prefill_s: float      # replica-seconds of its chunked prefill (it has the steps to itself)
    decode_s: float       # its share of the decode steps it sits in (step time / batch, per token)
    resident_s: float     # wall time it holds KV: prefill + output x step time
    kv_token_s: float     # integral of KV tokens held over that time

    @property
    def gpu_s(self) -> float:
        return self.prefill_s + self.decode_s

    def pool_s(self, pool_tokens: int) -> float:
        """Replica-seconds of the whole KV pool it occupies."""
        return self.kv_token_s / pool_tokens


def price(step_model: StepModel, prompt: int, output: int, *, decode_batch: int = 64, chunk: int = 8192) -> Price:
    """What one request of `prompt` + `output` tokens costs a replica, from the step model: a prefill
    in chunks of `chunk` tokens (each over the cache its earlier chunks built), then `output` decode
    steps at `decode_batch` sequences, of which it pays 1/decode_batch."""
    for name, v in (("prompt", prompt), ("output", output), ("decode_batch", decode_batch), ("chunk", chunk)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    starts = range(0, prompt, chunk)
    prefill = sum(step_model.prefill(min(chunk, prompt - s), cached_tokens=s).seconds for s in starts)
    context = prompt + output / 2
    step = step_model.decode(decode_batch, context).seconds
    decode_share = output * step / decode_batch
    resident = prefill + output * step
    kv = prompt / 2 * prefill + context * output * step
    return Price(prefill, decode_share, resident, kv)


def token_bucket(arrival_s, cost, rate: float, burst: float) -> np.ndarray:
    """Admission times of requests (in arrival order) through a token bucket that refills `rate`
    units per second up to `burst`, starting full; a request waits, first come first served,
    until the bucket holds its `cost`. A cost above `burst` could never pass: an error."""
    t = np.asarray(arrival_s, float)
    c = np.asarray(cost, float)
    if t.ndim != 1 or c.shape != t.shape:
        raise ValueError("arrival_s and cost must be 1-D arrays of the same length")
    if np.any(np.diff(t) < 0):
        raise ValueError("arrival_s must be non-decreasing")
    if not (rate > 0 and burst > 0):
        raise ValueError(f"rate and burst must be positive, got rate={rate}, burst={burst}")
    if np.any(c < 0) or np.any(c > burst):
        raise ValueError(f"every cost must lie in [0, burst={burst}]; the largest is {c.max() if c.size else 0}")
    admit = np.empty_like(t)
    level, clock = burst, 0.0
    for i, (arrive, need) in enumerate(zip(t, c)):
        now = max(arrive, clock)                      # FIFO: not before the previous admission
        level = min(burst, level + (now - clock) * rate)
        if level < need:
            now += (need - level) / rate
            level = need
        admit[i], clock, level = now, now, level - need
    return admit
