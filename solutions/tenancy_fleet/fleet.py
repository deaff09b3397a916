"""A fleet at minute resolution: diurnal load traces, replicas that take minutes to load, and what
a scaling policy does with them. Coarse on purpose: one row per minute of a day, a replica is a
capacity in requests per second, and a request that finds no capacity waits in a fluid queue.
The per-step simulator (`solutions.serving`) answers what happens inside a replica; this answers
how many replicas there are, and when.

    diurnal_rates(mean, hours, step_s, peak_to_trough, peak_hour)     rate per step, a smooth day
    sample_counts(rates, step_s, rng, burstiness)                      requests per step, seeded
    run_fleet(counts, step_s, capacity, policy, load_s, initial)       replicas, served, queue per step
    replica_capacity(step_model, prompt, output)                        req/s one replica sustains, at the
                                                                       largest batch its KV pool holds

`measured_vllm_gap` (the kit's ceiling against vLLM's measured throughput) lives in
`solutions.calibration.fidelity`, beside the replays it reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from solutions.capacity import step_model_capacity
from solutions.step_model import StepModel, StepShape
from solutions.units import GiB


def diurnal_rates(mean: float, *, hours: float = 24.0, step_s: float = 60.0, peak_to_trough: float = 3.0,
                  peak_hour: float = 14.0) -> np.ndarray:
    """Mean arrival rate (req/s) in each step of a day: a cosine with the given peak-to-trough ratio,
    peaking at `peak_hour`, averaging `mean`."""
    if not (mean > 0 and hours > 0 and step_s > 0 and peak_to_trough >= 1):
        raise ValueError("need mean > 0, hours > 0, step_s > 0 and peak_to_trough >= 1")
    t_h = np.arange(0, hours * 3600, step_s) / 3600
    depth = (peak_to_trough - 1) / (peak_to_trough + 1)
    return mean * (1 + depth * np.cos(2 * np.pi * (t_h - peak_hour) / 24))


def sample_counts(rates, step_s: float, rng: np.random.Generator, burstiness: float = 0.0) -> np.ndarray:
    """Requests arriving in each step: Poisson around `rates`, each step's rate first multiplied by a
    mean-one lognormal factor of coefficient of variation `burstiness` (0: plain Poisson), so traffic
    is burstier than Poisson the way real traffic is (campaigns, retries, batch jobs)."""
    r = np.asarray(rates, float)
    if np.any(r < 0) or step_s <= 0 or burstiness < 0:
        raise ValueError("rates must be >= 0, step_s > 0, burstiness >= 0")
    if burstiness > 0:
        sigma = math.sqrt(math.log(1 + burstiness ** 2))
        r = r * rng.lognormal(-sigma ** 2 / 2, sigma, r.shape)
    return rng.poisson(r * step_s)


@dataclass(frozen=True)
class ReplicaCapacity:
    """What one replica sustains for a traffic shape: `rate` req/s at `batch` resident sequences
    (the KV pool's limit at the traffic's mean context), each step `step_s` long (= TPOT there)."""

    rate: float
    batch: int
    step_s: float


def replica_capacity(step_model: StepModel, prompt: float, output: float, *,
                     non_kv_bytes: float = 2 * GiB) -> ReplicaCapacity:
    """Requests/s one replica sustains with prompts of `prompt` and answers of `output` tokens: N / (output x t(N))
    at N = the sequences its KV pool holds at the mean context prompt + output / 2, t(N) the steady-state step of
    N decodes plus their share of prompts (N / output prompts a step, as in q08). Throughput rises with the batch,
    so the largest batch the pool holds is the ceiling; a slope read at thousands of sequences, past the pool,
    prices a replica that does not exist (it reads a few percent high for 1,000/250-token traffic on an 8B)."""
    if not (prompt > 0 and output > 0):
        raise ValueError(f"need prompt > 0 and output > 0, got {prompt!r}, {output!r}")
    context = prompt + output / 2
    n = step_model_capacity(step_model, non_kv_bytes=non_kv_bytes).sequences(context)
    if n < 1:
        raise ValueError(f"the KV pool holds no sequence of {context:,.0f} tokens")
    t = step_model.time(StepShape.decode(n, context) + StepShape.prefill(prompt, sequences=n / output)).seconds
    return ReplicaCapacity(rate=n / (output * t), batch=n, step_s=t)


@dataclass(frozen=True)
class FleetRun:
    replicas: np.ndarray      # ready replicas in each step
    requested: np.ndarray     # replicas the policy asked for (ready + loading)
    served: np.ndarray        # requests served in each step
    queue: np.ndarray         # requests waiting at the end of each step
    step_s: float

    @property
    def replica_hours(self) -> float:
        return float(self.requested.sum() * self.step_s / 3600)   # loading replicas are paid for too

    def wait_s(self, capacity: float) -> np.ndarray:
        """Fluid estimate of the queueing delay at the end of each step: queue / service rate."""
        return self.queue / np.maximum(self.replicas * capacity, 1e-9)


def run_fleet(counts, step_s: float, capacity: float, policy: Callable[[int, dict], int], *, load_s: float,
              initial: int, min_replicas: int = 0) -> FleetRun:
    """Step through `counts` (requests arriving per step). Each ready replica serves up to `capacity`
    req/s; the rest waits, first come first served. After every step `policy(step, view)` returns the
    replicas wanted; new ones become ready `load_s` later, removed ones go at once. `view` holds what a
    real scaler could see: 'arrivals' (this step), 'served', 'queue', 'ready', 'requested', 'capacity'."""
    n = np.asarray(counts)
    if n.ndim != 1 or np.any(n < 0):
        raise ValueError("counts must be a 1-D array of non-negative request counts")
    if not (step_s > 0 and capacity > 0 and load_s >= 0 and initial >= 0):
        raise ValueError("need step_s > 0, capacity > 0, load_s >= 0, initial >= 0")
    delay = int(math.ceil(load_s / step_s))
    ready, loading, queue = initial, [], 0.0           # loading: (step it becomes ready, count)
    out = {k: np.zeros(n.size) for k in ("replicas", "requested", "served", "queue")}
    for i, arrivals in enumerate(n):
        ready += sum(c for when, c in loading if when <= i)
        loading = [(when, c) for when, c in loading if when > i]
        work = queue + arrivals
        served = min(work, ready * capacity * step_s)
        queue = work - served
        pending = sum(c for _, c in loading)
        out["replicas"][i], out["served"][i], out["queue"][i] = ready, served, queue
        want = max(min_replicas, int(policy(i, dict(arrivals=float(arrivals), served=float(served), queue=queue,
                                                     ready=ready, requested=ready + pending, capacity=capacity))))
        if want > ready + pending:
            loading.append((i + 1 + delay, want - ready - pending))
        elif want < ready + pending:
            cut = ready + pending - want
            drop_loading = min(cut, pending)            # cancel loads first, then stop ready replicas
            while drop_loading > 0 and loading:
                when, c = loading.pop()
                take = min(c, drop_loading)
                drop_loading -= take
                cut -= take
                if c > take:
                    loading.append((when, c - take))
            ready -= min(cut, ready)
        out["requested"][i] = ready + sum(c for _, c in loading)
    return FleetRun(out["replicas"], out["requested"], out["served"], out["queue"], step_s)
