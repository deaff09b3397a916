"""The serving simulator: the kit's one step model, exact queue mechanics, vLLM's policy.

What each group pins:
- a replica prices its steps with the kit's `StepModel` (tests/test_step_model.py pins the model);
- Little's law holds in every run (from the engine's own counters, not from the timestamps);
- the single-server mode is an exact FCFS queue (customer by customer against Lindley's
  recursion) and its mean wait matches M/M/1, M/D/1 and Pollaczek-Khinchine;
- at a fixed batch the decode throughput is the kit's B / step_time(B) curve;
- the scheduler does what vLLM v1 does: budget, chunking, FCFS, newest-first recompute preemption;
- a run is a function of its seed; impossible scenarios are refused naming the parameter.
"""

import math

import numpy as np
import pytest

from solutions.hardware import A100_80GB_SXM, H100_SXM, H200_SXM
from solutions.models import LLAMA_3_1_8B, LLAMA_3_3_70B, MIXTRAL_8X7B, QWEN2_5_7B
from solutions.serving import (
    SLO, Exponential, Fixed, Gamma, GammaArrivals, KVPool, LogNormal, OnOff, Poisson, Replica, SchedulerConfig,
    Trace, Uniform, Workload, lindley_waits, md1_wait, mg1_wait, mm1_wait, simulate)
from solutions.step_defaults import SERVING_STACK_S, VLLM_DEFAULTS
from solutions.step_model import FP8, StepModel

# ---- step time: the kit's one step model ----------------------------------------------

def test_a_replica_prices_steps_with_the_kits_step_model():
    replica = Replica.of(LLAMA_3_3_70B, H100_SXM, tp=4)  # by default: vLLM at its defaults
    assert replica.step_time == StepModel.of(LLAMA_3_3_70B, H100_SXM, tp=4, regime="vllm-defaults")
    assert replica.serving_stack_s == VLLM_DEFAULTS.serving_stack_s
    ceiling = Replica.of(LLAMA_3_3_70B, H100_SXM, tp=4, regime="kernel-ceiling")
    assert ceiling.step_time == StepModel.of(LLAMA_3_3_70B, H100_SXM, tp=4) and ceiling.serving_stack_s == SERVING_STACK_S
    assert Replica.of(LLAMA_3_3_70B, H100_SXM, tp=4, serving_stack_s=0.0).serving_stack_s == 0.0
    fp8 = Replica.of(LLAMA_3_3_70B, H100_SXM, tp=2, precision=FP8)
    assert fp8.step_time.precision == FP8 and fp8.kv_pool.num_blocks > 0


def test_chunked_prefill_costs_more_steps_than_one_whole_prefill():
    """A 4,000-token prompt in 512-token chunks pays the weights and the per-step overhead once
    per chunk: its prefill takes longer than in one step."""
    work = Workload(np.array([0.0]), 4000, 2)
    chunked = simulate(work, Replica.of(LLAMA_3_1_8B, H100_SXM, max_num_batched_tokens=512, max_num_seqs=256))
    whole = simulate(work, Replica.of(LLAMA_3_1_8B, H100_SXM, max_num_batched_tokens=4096))
    assert chunked.first_token_s[0] > 1.05 * whole.first_token_s[0]


# ---- runs shared by several tests ------------------------------------------------------

def _chat(n=3000, rate=25.0, seed=0, **kw):
    return Workload.generate(n, Poisson(rate), LogNormal(800, 1.0), LogNormal(200, 1.0), seed=seed, **kw)


@pytest.fixture(scope="module")
def busy_run():
    """Llama 3.1 8B on an H100 with a KV pool small enough to force preemptions."""
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM, kv_blocks=1200, max_num_batched_tokens=2048,
                         max_num_seqs=256)
    work = _chat(n=3000, rate=30.0)
    return work, replica, simulate(work, replica)


@pytest.fixture(scope="module")
def light_run():
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM)
    work = _chat(n=3000, rate=10.0, seed=1, prefix_hit=0.5)
    return work, replica, simulate(work, replica)


# ---- Little's law ----------------------------------------------------------------------

def _single_server(n, rho, service, seed=0):
    work = Workload.single_server(n, Poisson(rho / service.mean), service, seed=seed)
    return work, simulate(work, Replica.single_server())


def test_littles_law_holds_in_every_run(busy_run, light_run):
    bursty = Workload.generate(1500, OnOff(peak_rate=60, on_s=5, off_s=10), Uniform(100, 3000), Fixed(100),
                                seed=3)
    no_chunks = Replica.of(LLAMA_3_1_8B, H100_SXM, max_num_batched_tokens=16384, chunked_prefill=False)
    runs = [busy_run[2], light_run[2], simulate(bursty, Replica.of(LLAMA_3_1_8B, H100_SXM)),
            simulate(bursty, no_chunks), _single_server(5000, 0.8, Exponential(1.0))[1]]
    for result in runs:
        law = result.littles_law()
        assert law["rel_error"] < 0.01
        assert law["rel_error"] < 1e-9  # it is bookkeeping: anything above rounding is a lost request


# ---- queueing closed forms -------------------------------------------------------------

SERVICES = {"M/M/1": Exponential(1.0), "M/D/1": Fixed(1.0), "M/G/1": Gamma(1.0, cv=1.5)}


@pytest.mark.parametrize("rho", [0.5, 0.7, 0.9])
@pytest.mark.parametrize("kind", SERVICES)
def test_single_server_is_exactly_a_fcfs_queue(kind, rho):
    """Customer by customer, the simulator's waits are Lindley's recursion on the same sample path."""
    work, result = _single_server(20_000, rho, SERVICES[kind], seed=11)
    assert np.allclose(result.queue_wait, lindley_waits(work.arrival_s, work.service_s), rtol=0, atol=1e-7)
    assert np.allclose(result.e2e - result.queue_wait, work.service_s, rtol=0, atol=1e-9)


def _batch_means_se(x, batches=50):
    means = np.array([b.mean() for b in np.array_split(x, batches)])
    return means.std(ddof=1) / math.sqrt(batches)


@pytest.mark.parametrize("rho", [0.5, 0.7, 0.9])
@pytest.mark.parametrize("kind", SERVICES)
def test_mean_wait_matches_the_closed_forms(kind, rho):
    """Within 2% or three standard errors, whichever is wider. 200,000 arrivals resolve about 1-2%
    at rho 0.5-0.7 but only ~5% at 0.9 (the wait's autocorrelation time grows like
    1/(1 - rho)^2), so the test cannot promise 2% there without tens of millions of arrivals;
    `python benchmarks/simulator.py --queueing` runs the strict 2% check with enough of them."""
    service = SERVICES[kind]
    work, result = _single_server(200_000, rho, service, seed=2024)
    lam = rho / service.mean
    pk = mg1_wait(lam, service)
    textbook = {"M/M/1": mm1_wait(lam, 1 / service.mean), "M/D/1": md1_wait(lam, service.mean)}.get(kind, pk)
    assert textbook == pytest.approx(pk, rel=1e-12)
    waits = result.queue_wait
    assert abs(waits.mean() - pk) <= max(0.02 * pk, 3 * _batch_means_se(waits))


def test_closed_forms_refuse_an_unstable_queue():
    with pytest.raises(ValueError, match="utilisation"):
        mg1_wait(1.2, Exponential(1.0))
    with pytest.raises(ValueError, match="arrival_rate"):
        mm1_wait(-1.0, 1.0)


# ---- throughput versus batch: the kit's curve ------------------------------------------

@pytest.mark.parametrize("batch", [1, 8, 64, 256, 1024])
def test_decode_throughput_is_the_kits_curve(batch):
    """B sequences prefill together, then decode 15 steps over contexts 1017..1031 (mean 1024):
    tokens per second of the decode steps is B / step time (the kit's step model at B, 1024)."""
    model, gpu = LLAMA_3_1_8B, H100_SXM
    prompt, output = 1017, 16
    sm = StepModel.of(model, gpu, regime="vllm-defaults")
    replica = Replica.of(model, gpu, max_num_batched_tokens=batch * prompt, max_num_seqs=batch,
                         kv_blocks=batch * 70)  # room for every context: the curve is about time
    work = Workload(np.zeros(batch), prompt, output)
    steps = simulate(work, replica).steps
    decode = steps["prefill_tokens"] == 0
    assert decode.sum() == output - 1 and np.all(steps["decode_tokens"][decode] == batch)
    seconds = steps["end_s"][decode] - steps["start_s"][decode]
    kit_each = [sm.decode(batch, prompt + j).seconds for j in range(output - 1)]
    assert np.allclose(seconds, kit_each, rtol=1e-12, atol=0)
    simulated = batch * decode.sum() / seconds.sum()
    kit = batch / sm.decode(batch, 1024).seconds
    assert simulated == pytest.approx(kit, rel=1e-3)


class _StepByStep:
    """The same step prices without the vectorised decode-run shortcut: every step scheduled alone."""

    def __init__(self, timer):
        self.timer = timer

    def __call__(self, plan):
        return self.timer(plan)


@pytest.mark.parametrize("kv_blocks", [None, 900], ids=["roomy pool", "pool that runs out"])
def test_pricing_decode_runs_at_once_changes_nothing(kv_blocks):
    """The engine prices runs of identical decode steps together; one step at a time must agree."""
    fast = Replica.of(LLAMA_3_1_8B, H100_SXM, kv_blocks=kv_blocks)
    slow = Replica(_StepByStep(fast.step_time), fast.scheduler, fast.kv_pool)
    work = _chat(n=600, rate=8.0, seed=9)
    a, b = simulate(work, fast), simulate(work, slow)
    assert kv_blocks is None or a.preemptions.sum() > 0
    assert np.array_equal(a.preemptions, b.preemptions)
    for key in ("decode_tokens", "prefill_tokens", "kv_blocks_used", "waiting", "running"):
        assert np.array_equal(a.steps[key], b.steps[key]), key
    assert np.allclose(a.token_s, b.token_s, rtol=1e-12, atol=0)


# ---- the scheduler: vLLM v1's rules ----------------------------------------------------

def test_every_step_respects_budget_sequence_cap_and_pool(busy_run, light_run):
    for _, replica, result in (busy_run, light_run):
        s = result.steps
        assert np.all(s["decode_tokens"] + s["prefill_tokens"] <= replica.scheduler.max_num_batched_tokens)
        assert np.all(s["running"] <= replica.scheduler.max_num_seqs)
        assert np.all(s["kv_blocks_used"] <= replica.kv_pool.num_blocks)
        assert np.all(np.diff(s["start_s"]) > 0) and np.all(s["end_s"] > s["start_s"])


def test_the_busy_run_preempts_and_still_finishes_everything(busy_run):
    work, _, result = busy_run
    assert result.preemptions.sum() > 0
    assert np.all(result.finish_s >= result.first_token_s) and np.all(result.first_token_s > result.arrival_s)
    assert result.steps["kv_blocks_used"].max() == result.kv_blocks or result.preemptions.sum() == 0


def test_every_token_is_recorded_once_in_time_order(busy_run):
    work, _, result = busy_run
    for rid in range(0, len(work), 97):
        times = result.token_times(rid)
        assert times.size == work.output_tokens[rid]
        assert times[0] == result.first_token_s[rid] and times[-1] == result.finish_s[rid]
        assert np.all(np.diff(times) > 0)
    assert result.itl.size == (work.output_tokens - 1).sum()
    assert np.all(result.itl > 0)


def test_tokens_in_a_window_are_counted_without_building_every_tokens_time(busy_run):
    """`tokens_between` (from the runs of each request's tokens, what steady windows use) counts
    exactly the tokens whose times fall in [t0, t1], preempted and recomputed requests included."""
    _, _, res = busy_run
    end = res.steps["end_s"]
    rng = np.random.default_rng(5)
    windows = [tuple(np.sort(rng.uniform(end[0] - 1, end[-1] + 1, 2))) for _ in range(100)]
    windows += [(end[i], end[j]) for i, j in np.sort(rng.integers(0, end.size, (100, 2)), axis=1)]
    for t0, t1 in windows:
        assert res.tokens_between(t0, t1) == int(((res.token_s >= t0) & (res.token_s <= t1)).sum())


def test_a_subset_of_requests_keeps_their_tokens_and_the_shared_steps(busy_run):
    """`Result.subset` (one tenant's view): the selected requests' arrays and every one of their tokens,
    in request order, over the whole replica's steps."""
    work, _, res = busy_run
    m = np.arange(len(work)) % 3 == 1
    sub = res.subset(m)
    assert len(sub) == m.sum() and np.array_equal(sub.ttft, res.ttft[m])
    assert np.array_equal(sub.token_s, res.token_s[np.repeat(m, res.output_tokens)])
    assert np.array_equal(sub.token_times(5), res.token_times(int(np.flatnonzero(m)[5])))
    end = res.steps["end_s"]
    t0, t1 = end[end.size // 4], end[end.size // 2]
    assert sub.tokens_between(t0, t1) == int(((sub.token_s >= t0) & (sub.token_s <= t1)).sum())
    assert sub.steps is res.steps
    with pytest.raises(ValueError, match="boolean mask"):
        res.subset(m[:-1])


def test_inter_token_gaps_are_each_requests_own(busy_run):
    """ITL over a subset of requests is the gaps within each selected request's tokens, in order,
    never a gap from one request's last token to the next one's first."""
    work, _, res = busy_run
    m = np.arange(len(work)) % 4 != 2
    expect = np.concatenate([np.diff(res.token_times(rid)) for rid in np.flatnonzero(m)])
    assert np.array_equal(res._itl(m), expect)
    assert np.array_equal(res.itl, np.concatenate([np.diff(res.token_times(rid)) for rid in range(len(work))]))


def test_preemption_takes_the_newest_and_requeues_it_at_the_front():
    """Pool of 4 blocks of 4 tokens, prefix caching off. A and B (4-token prompts, 8 outputs) arrive
    together. At step 5 both need a third block with none free: B, the newest, is preempted (A is
    older), waits until A finishes at step 7, then recomputes its 9 tokens in one step (8) and
    decodes at 9 and 10."""
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM, kv_blocks=4, block_size=4, max_num_seqs=4,
                         enable_prefix_caching=False)
    result = simulate(Workload(np.zeros(2), 4, 8), replica)
    end = result.steps["end_s"]
    assert list(result.preemptions) == [0, 1]
    assert np.array_equal(result.token_times(0), end[[0, 1, 2, 3, 4, 5, 6, 7]])
    assert np.array_equal(result.token_times(1), end[[0, 1, 2, 3, 4, 8, 9, 10]])
    assert result.steps["prefill_tokens"][8] == 4 + 5  # prompt + the 5 tokens it had sampled


def test_a_preempted_request_recomputes_only_what_the_prefix_cache_lost():
    """The same run with prefix caching on (vLLM's default): B leaves its 2 full blocks (8 tokens)
    cached, tail first in line for eviction. A's third block at step 5 evicts B's tail block; at
    step 8 B finds its head block (4 tokens) and recomputes 9 - 4 = 5 tokens. On a pool with a
    spare block nothing is evicted: B finds both blocks and recomputes only its last token."""
    tight = Replica.of(LLAMA_3_1_8B, H100_SXM, kv_blocks=4, block_size=4, max_num_seqs=4)
    result = simulate(Workload(np.zeros(2), 4, 8), tight)
    assert list(result.preemptions) == [0, 1]
    assert result.steps["prefill_tokens"][8] == 9 - 4
    assert result.evicted_blocks == 1
    # three requests: C fills the pool, so B is preempted while a block is still spare after it
    work = Workload(np.zeros(3), np.array([4, 4, 4]), np.array([8, 8, 1]))
    roomy = simulate(work, Replica.of(LLAMA_3_1_8B, H100_SXM, kv_blocks=4, block_size=4, max_num_seqs=4,
                                      enable_prefix_caching=False))
    cached = simulate(work, Replica.of(LLAMA_3_1_8B, H100_SXM, kv_blocks=4, block_size=4, max_num_seqs=4))
    assert cached.steps["prefill_tokens"].sum() < roomy.steps["prefill_tokens"].sum()
    assert cached.output_tokens.sum() == roomy.output_tokens.sum() == 17


def test_chunked_prefill_splits_a_long_prompt_and_keeps_decodes_running():
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM, max_num_batched_tokens=512, max_num_seqs=64)
    work = Workload(np.array([0.0, 0.001]), np.array([16, 4000]), np.array([400, 2]))
    s = simulate(work, replica).steps
    chunks = s["prefill_tokens"][s["prefill_tokens"] > 0]
    assert chunks.sum() == 4016
    assert np.all(chunks[1:-1] == 512 - 1)  # one token of each step's budget went to the decode
    assert np.all(s["decode_tokens"][1:len(chunks)] == 1)  # the short request kept decoding


def test_without_chunking_a_prompt_waits_for_a_whole_budget():
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM, max_num_batched_tokens=4096, max_num_seqs=64,
                         chunked_prefill=False)
    work = Workload(np.array([0.0, 0.001]), np.array([16, 4000]), np.array([400, 2]))
    s = simulate(work, replica).steps
    chunks = s["prefill_tokens"][s["prefill_tokens"] > 0]
    assert list(chunks) == [16, 4000]


def test_prefix_hits_skip_their_prefill(light_run):
    work, replica, result = light_run
    bs = replica.kv_pool.block_size
    shared = np.minimum(work.prefix_hit_tokens, work.prompt_tokens - 1) // bs * bs
    assert result.preemptions.sum() == 0 and result.cached_tokens.sum() > 0.5 * shared.sum()
    assert np.all(result.cached_tokens <= shared) and np.all(result.cached_tokens % bs == 0)
    assert result.steps["prefill_tokens"].sum() == (work.prompt_tokens - result.cached_tokens).sum()


def test_a_prefix_hits_only_once_cached_and_is_evicted_under_pressure():
    """Group 0's 1,600-token system prompt: the first request computes it, the second (arriving
    after the first is done) hits all 100 blocks. Then a burst of requests of other groups needs
    the whole pool: the unreferenced cached prefix is evicted, so the last group-0 request misses."""
    bs, prefix = 16, 1600
    arrivals = np.array([0.0, 1.0, 2.0, 2.0, 2.0, 4.0])
    prompts = np.array([1700, 1700, 3000, 3000, 3000, 1700])
    groups = np.array([0, 0, 1, 2, 3, 0])
    work = Workload(arrivals, prompts, 8, prefix_hit_tokens=np.where(groups == 0, prefix, 0), prefix_group=groups)
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM, kv_blocks=3 * 188 + 50, block_size=bs, max_num_seqs=8,
                         max_num_batched_tokens=16384)
    result = simulate(work, replica)
    assert list(result.cached_tokens) == [0, prefix, 0, 0, 0, 0]
    assert result.evicted_blocks == prefix // bs
    assert result.steps["kv_blocks_used"].max() <= replica.kv_pool.num_blocks
    law = result.littles_law()
    assert law["rel_error"] < 1e-9


def test_fcfs_admits_in_arrival_order(light_run):
    _, _, result = light_run
    assert np.all(np.diff(result.admitted_s) >= 0)


def test_goodput_counts_requests_that_meet_every_target(light_run):
    _, _, result = light_run
    loose, tight = SLO(ttft_s=60, tpot_s=1), SLO(ttft_s=1e-6)
    assert result.goodput(loose) == pytest.approx(len(result) / result.span_s)
    assert result.goodput(tight) == 0
    summary = result.summary(SLO(ttft_s=0.5, tpot_s=0.05), window="run")
    assert 0 < summary["slo_attainment"] <= 1 and summary["ttft"]["p99"] >= summary["ttft"]["p50"]


def test_tenant_summaries_split_the_run():
    result = simulate(_chat(n=1000, seed=4, tenants=3), Replica.of(LLAMA_3_1_8B, H100_SXM))
    slo = SLO(ttft_s=0.2, tpot_s=0.02)
    parts = result.by_tenant(slo, window="run")
    assert sorted(parts) == [0, 1, 2]
    assert sum(p["requests"] for p in parts.values()) == 1000
    assert sum(p["goodput_req_per_s"] for p in parts.values()) == pytest.approx(result.goodput(slo))
    assert sum(p["output_tokens_per_s"] for p in parts.values()) == pytest.approx(result.output_tokens_per_s)
    with pytest.raises(ValueError, match="requests"):
        result.summary(requests=np.zeros(1000, bool), window="run")


# ---- determinism -----------------------------------------------------------------------

def test_a_run_is_a_function_of_its_seed():
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM, kv_blocks=800)
    a, b = (simulate(_chat(n=800, seed=5), replica) for _ in range(2))
    c = simulate(_chat(n=800, seed=6), replica)
    assert np.array_equal(a.token_s, b.token_s) and np.array_equal(a.preemptions, b.preemptions)
    assert all(np.array_equal(a.steps[k], b.steps[k]) for k in a.steps)
    assert not np.array_equal(a.arrival_s, c.arrival_s)


def test_arrival_processes_have_their_stated_rates():
    rng_n = 200_000
    for process in (Poisson(5.0), GammaArrivals(5.0, cv=3.0), OnOff(peak_rate=20.0, on_s=1.0, off_s=3.0)):
        times = process.times(rng_n, np.random.default_rng(0))
        assert rng_n / times[-1] == pytest.approx(process.rate, rel=0.03)
    gaps = np.diff(GammaArrivals(5.0, cv=3.0).times(rng_n, np.random.default_rng(1)))
    assert gaps.std() / gaps.mean() == pytest.approx(3.0, rel=0.05)
    for dist in (LogNormal(1000, 1.5), Gamma(3.0, 0.5), Uniform(2, 6)):
        x = dist.sample(rng_n, np.random.default_rng(2))
        assert x.mean() == pytest.approx(dist.mean, rel=0.03)


# ---- bad input -------------------------------------------------------------------------

@pytest.mark.parametrize("make,name", [
    (lambda: Poisson(-1.0), "rate"),
    (lambda: Poisson(0), "rate"),
    (lambda: GammaArrivals(2.0, cv=-1), "cv"),
    (lambda: OnOff(10, on_s=0, off_s=1), "on_s"),
    (lambda: SchedulerConfig(max_num_batched_tokens=0), "max_num_batched_tokens"),
    (lambda: SchedulerConfig(max_num_seqs=0), "max_num_seqs"),
    (lambda: SchedulerConfig(max_num_batched_tokens=64, max_num_seqs=128), "max_num_batched_tokens"),
    (lambda: KVPool(0), "num_blocks"),
    (lambda: KVPool(10, block_size=0), "block_size"),
    (lambda: LogNormal(-5, 1.0), "mean"),
    (lambda: Workload(np.array([1.0, 0.5]), 10, 10), "arrival_s"),
    (lambda: Workload(np.array([0.0]), 0, 10), "prompt_tokens"),
    (lambda: Workload(np.array([0.0]), 10, -1), "output_tokens"),
    (lambda: Workload.generate(0, Poisson(1), Fixed(10), Fixed(10)), "n"),
    (lambda: Trace([3.0, 1.0]), "non-decreasing"),
    (lambda: Replica.of(LLAMA_3_1_8B, H100_SXM, gpu_memory_utilization=1.5), "gpu_memory_utilization"),
    (lambda: Replica.of(LLAMA_3_3_70B, H100_SXM), "no room for KV"),
])
def test_impossible_scenarios_are_refused_naming_the_parameter(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_a_prompt_larger_than_the_kv_pool_is_refused_up_front():
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM, kv_blocks=10)
    with pytest.raises(ValueError, match="prompt_tokens.*kv_pool.num_blocks"):
        simulate(Workload(np.array([0.0, 1.0]), np.array([10, 500]), 10), replica)


def test_a_prompt_larger_than_the_budget_without_chunking_is_refused():
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM, max_num_batched_tokens=1024, chunked_prefill=False)
    with pytest.raises(ValueError, match="max_num_batched_tokens"):
        simulate(Workload(np.array([0.0]), 2000, 10), replica)
