"""How fast the serving simulator runs, and how its cost grows.

    python benchmarks/simulator.py             # headline: 100,000 requests, Llama 3.1 8B on an H100
    python benchmarks/simulator.py --queueing  # the strict 2% closed-form check: 150M arrivals, ~30 min

Times are CPU seconds of this process (time.process_time), so a busy machine inflates them less
than wall clock would. The simulator is single-threaded: one core.

Cost model: a step costs O(1) whatever the batch (running decodes are kept as aggregates), a
request costs O(log n) (its finish sits in a heap), and runs of identical decode-only steps are
priced together with numpy. So CPU time ~ a * requests + b * steps, and the number of steps
falls as the batch grows (more tokens per step).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_8B
from solutions.serving import (SLO, Exponential, Fixed, Gamma, LogNormal, Poisson, Replica, Workload, mg1_wait,
                               simulate)

PROMPT, OUTPUT = LogNormal(mean=1000, cv=1.0), LogNormal(mean=250, cv=1.0)
RATE = 20.0  # requests/s: loaded but stable (TTFT p99 under a second; at 30 req/s the queue grows without bound)


def timed(work, replica):
    t0 = time.process_time()
    result = simulate(work, replica)
    return result, time.process_time() - t0


def headline(n=100_000):
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM)
    work = Workload.generate(n, Poisson(RATE), PROMPT, OUTPUT, seed=0)
    result, cpu = timed(work, replica)
    s = result.summary(SLO(ttft_s=1.0, tpot_s=0.05))
    print(f"## {n:,} requests, {replica.name}, vLLM defaults (8192 tokens/step, 1024 seqs), "
          f"{replica.kv_pool.num_blocks:,} KV blocks")
    print(f"workload: Poisson {RATE:g} req/s, prompts {PROMPT}, outputs {OUTPUT}")
    print(f"simulated {result.span_s:,.0f} s of serving in {result.steps['end_s'].size:,} steps")
    print(f"CPU time {cpu:.2f} s -> {n / cpu:,.0f} requests simulated per second "
          f"({cpu / result.steps['end_s'].size * 1e6:.1f} us per step)")
    print(f"TTFT p50 {s['ttft']['p50'] * 1e3:.0f} ms, p99 {s['ttft']['p99'] * 1e3:.0f} ms; "
          f"TPOT p50 {s['tpot']['p50'] * 1e3:.1f} ms, p99 {s['tpot']['p99'] * 1e3:.1f} ms; "
          f"{s['output_tokens_per_s']:,.0f} output tokens/s; "
          f"Little's law error {result.littles_law()['rel_error']:.1e}")
    return cpu


def growth_with_requests():
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM)
    print("\n## cost against the number of requests (same scenario)")
    print("| requests | steps | CPU s | requests/s | us/step |\n|---:|---:|---:|---:|---:|")
    for n in (10_000, 30_000, 100_000):
        result, cpu = timed(Workload.generate(n, Poisson(RATE), PROMPT, OUTPUT, seed=0), replica)
        steps = result.steps["end_s"].size
        print(f"| {n:,} | {steps:,} | {cpu:.2f} | {n / cpu:,.0f} | {cpu / steps * 1e6:.1f} |")


def growth_with_batch(n=20_000):
    """All requests queued at t=0 and a cap of B sequences: the batch stays near B until the KV
    pool (444,848 tokens here) binds; the "mean running" column shows where it does."""
    print(f"\n## cost against the batch: {n:,} requests queued at once, max_num_seqs = B")
    print("| B | mean running | steps | CPU s | requests/s | us/step |\n|---:|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    prompts = np.maximum(1, np.rint(PROMPT.sample(n, rng))).astype(int)
    outputs = np.maximum(1, np.rint(OUTPUT.sample(n, rng))).astype(int)
    for batch in (8, 64, 256, 1024):
        replica = Replica.of(LLAMA_3_1_8B, H100_SXM, max_num_seqs=batch,
                             max_num_batched_tokens=max(8192, batch))
        result, cpu = timed(Workload(np.zeros(n), prompts, outputs), replica)
        steps = result.steps["end_s"].size
        print(f"| {batch} | {result.steps['running'].mean():.0f} | {steps:,} | {cpu:.2f} | {n / cpu:,.0f} "
              f"| {cpu / steps * 1e6:.1f} |")


# Arrivals per replication: the wait's autocorrelation time grows like 1/(1 - rho)^2, so rho 0.9
# needs ~100x the arrivals of rho 0.5 for the same precision (about 0.5% standard error here).
ARRIVALS = {0.5: 200_000, 0.6: 300_000, 0.7: 500_000, 0.8: 1_000_000, 0.9: 3_000_000}


def queueing(replications=10):
    """Mean wait against the closed forms with enough arrivals: `replications` independent runs
    per point; the error bar is 2 standard errors of the mean over replications."""
    services = {"M/M/1": Exponential(1.0), "M/D/1": Fixed(1.0), "M/G/1 (gamma, cv 1.5)": Gamma(1.0, cv=1.5)}
    print(f"\n## mean wait against the closed forms ({replications} runs per point)")
    print("| queue | rho | arrivals | simulated Wq | closed form | error | 2 SE |\n|---|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    for name, service in services.items():
        for rho, n in ARRIVALS.items():
            means = []
            for seed in range(replications):
                work = Workload.single_server(n, Poisson(rho / service.mean), service, seed=1000 + seed)
                means.append(simulate(work, Replica.single_server()).queue_wait.mean())
            theory = mg1_wait(rho / service.mean, service)
            sim = float(np.mean(means))
            two_se = 2 * float(np.std(means, ddof=1)) / math.sqrt(replications) / theory
            worst = max(worst, abs(sim / theory - 1))
            print(f"| {name} | {rho} | {replications * n:,} | {sim:.4f} | {theory:.4f} | {sim / theory - 1:+.2%} "
                  f"| {two_se:.2%} |")
    print(f"worst error {worst:.2%} (claim: within 2%)")
    return worst


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queueing", action="store_true",
                        help="run the strict closed-form check (150M arrivals: ~30 min)")
    parser.add_argument("--requests", type=int, default=100_000)
    args = parser.parse_args()
    if args.queueing:
        queueing()
    else:
        headline(args.requests)
        growth_with_requests()
        growth_with_batch()
