"""The simulator's policy hook and the shortest-prefill-first policy."""

from functools import partial

import numpy as np
import pytest

from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_8B
from solutions.serving import FCFSScheduler, Fixed, LogNormal, Poisson, Replica, Workload, simulate
from solutions.serving.kv_pool import KVPool
from solutions.serving.policies import FairScheduler, PriorityScheduler, ShortestPrefillFirst
from solutions.serving.step_scheduler import SchedulerConfig

# the workloads below were sized for the kernel ceiling; the policies, not the regime, are under test
REPLICA = Replica.of(LLAMA_3_1_8B, H100_SXM, regime="kernel-ceiling")


def long_then_short(n_short=10, long_tokens=32_000, short_tokens=500, gap_s=0.01):
    """One long prompt, then short ones arriving just behind it."""
    arrival = np.arange(n_short + 1) * gap_s
    prompt = np.array([long_tokens] + [short_tokens] * n_short)
    return Workload(arrival, prompt, np.full(n_short + 1, 100))


def chat(n=600, rate=25.0, seed=0):
    return Workload.generate(n, Poisson(rate), LogNormal(800, 1.0), LogNormal(150, 1.0), seed=seed)


class FIFOWithoutShortcut(FCFSScheduler):
    """FCFS that claims it may skip the head: the simulator must not run decodes ahead of arrivals."""

    fifo_admission = False


def test_default_policy_is_fcfs():
    work = chat()
    a, b = simulate(work, REPLICA), simulate(work, REPLICA, policy=FCFSScheduler)
    assert np.array_equal(a.token_s, b.token_s)


def test_decode_run_shortcut_changes_nothing_for_fcfs():
    # a small pool so the head blocks on KV and decode runs happen while requests wait
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM, kv_blocks=3000)
    work = chat(rate=40.0)
    a, b = simulate(work, replica), simulate(work, replica, policy=FIFOWithoutShortcut)
    assert np.allclose(a.token_s, b.token_s)
    assert np.array_equal(a.preemptions, b.preemptions)


def test_short_prompts_overtake_a_long_one():
    work = long_then_short()
    fcfs, spf = simulate(work, REPLICA), simulate(work, REPLICA, policy=ShortestPrefillFirst)
    assert np.all(fcfs.ttft[1:] > 1.0)  # behind the long prompt's prefill
    assert np.all(spf.ttft[1:] < 0.5 * fcfs.ttft[1:])
    assert spf.ttft[0] > fcfs.ttft[0]  # the long prompt pays for it
    for res in (fcfs, spf):
        assert np.array_equal(res.output_tokens, work.output_tokens)


def test_aging_bounds_the_wait_of_a_long_prompt():
    # a long prompt at t = 5 s under short traffic that keeps the queue non-empty
    base = Workload.generate(1500, Poisson(30.0), LogNormal(1500, 0.5), LogNormal(100, 0.5), seed=2)
    at = int(np.searchsorted(base.arrival_s, 5.0))
    work = Workload(np.insert(base.arrival_s, at, 5.0), np.insert(base.prompt_tokens, at, 24_000),
                    np.insert(base.output_tokens, at, 50))
    starve = simulate(work, REPLICA, policy=ShortestPrefillFirst)
    aged = simulate(work, REPLICA, policy=partial(ShortestPrefillFirst, aging_tokens_per_s=20_000))
    assert aged.ttft[at] < 0.5 * starve.ttft[at]


def test_aging_credit_is_per_second_whatever_the_step_time():
    # A long prompt at t = 0, then four short ones every 1/16 s; each step prefills one short prompt
    # (budget = its size) and answers it (one output token). Two replicas, steps 1/64 s and 1/16 s
    # (exact in binary, so every arrival lands on a step start of both). With a credit of R tokens per
    # second waited, a short prompt that arrived at a outranks the long one iff S + R a < L: those
    # that arrived before (L - S) / R = 2.03 s go first on both replicas, the rest after it.
    L, S, R = 2130, 100, 1000.0
    arrival = np.concatenate([[0.0], np.repeat(np.arange(64) / 16, 4)])
    work = Workload(arrival, np.array([L] + [S] * 256), np.ones(257, np.int64))
    expect = set(np.flatnonzero(arrival[1:] < (L - S) / R) + 1)
    assert len(expect) == 132
    long_admitted = []
    for step_s in (1 / 64, 1 / 16):
        replica = Replica(lambda plan, dt=step_s: dt, SchedulerConfig(S, S), KVPool(10_000))
        res = simulate(work, replica, policy=partial(ShortestPrefillFirst, aging_tokens_per_s=R))
        ahead = set(np.flatnonzero(res.admitted_s < res.admitted_s[0]))
        assert ahead == expect, step_s
        long_admitted.append(res.admitted_s[0])
    assert long_admitted[1] > 3 * long_admitted[0]  # the two replicas really run at different speeds


def test_bad_policy_inputs():
    with pytest.raises(TypeError, match="policy"):
        simulate(chat(n=10), REPLICA, policy="spf")
    with pytest.raises(ValueError, match="aging_tokens_per_s"):
        simulate(chat(n=10), REPLICA, policy=partial(ShortestPrefillFirst, aging_tokens_per_s=-1))
    with pytest.raises(TypeError, match="step_s"):  # gone: the credit is per second of the simulator's clock
        simulate(chat(n=10), REPLICA, policy=partial(ShortestPrefillFirst, aging_tokens_per_s=1, step_s=0.02))


def two_classes(n_chat=300, n_jobs=60, seed=5):
    chat = Workload.generate(n_chat, Poisson(10.0), LogNormal(500, 0.5), LogNormal(200, 0.5), seed=seed)
    jobs = Workload.generate(n_jobs, Poisson(2.0), LogNormal(6000, 0.3), LogNormal(1000, 0.3), seed=seed + 1)
    arr = np.concatenate([chat.arrival_s, jobs.arrival_s])
    order = np.argsort(arr, kind="stable")
    prio = np.concatenate([np.zeros(n_chat, int), np.ones(n_jobs, int)])[order]
    work = Workload(arr[order], np.concatenate([chat.prompt_tokens, jobs.prompt_tokens])[order],
                    np.concatenate([chat.output_tokens, jobs.output_tokens])[order], priority=prio)
    return work, prio


def test_priority_serves_the_high_class_first():
    work, prio = two_classes()
    fcfs = simulate(work, REPLICA)
    pri = simulate(work, REPLICA, policy=partial(PriorityScheduler, priority=prio))
    assert np.percentile(pri.ttft[prio == 0], 99) < np.percentile(fcfs.ttft[prio == 0], 99)


def test_class_cap_bounds_the_kv_a_class_reserves():
    work, prio = two_classes()
    cap = 49_000 // 16
    res = simulate(work, REPLICA, policy=partial(PriorityScheduler, priority=prio, class_kv_blocks={1: cap}))
    reserve = -(-(work.prompt_tokens + work.output_tokens) // 16)
    jobs = np.flatnonzero(prio == 1)
    for t in res.steps["start_s"][::50]:
        live = jobs[(res.admitted_s[jobs] <= t) & (res.finish_s[jobs] > t)]
        assert reserve[live].sum() <= cap
    uncapped = simulate(work, REPLICA, policy=partial(PriorityScheduler, priority=prio))
    assert np.median(res._itl(prio == 0)) < np.median(uncapped._itl(prio == 0))


def test_priority_bad_inputs():
    work, prio = two_classes(n_chat=5, n_jobs=2)
    with pytest.raises(ValueError, match="priority has"):
        simulate(work, REPLICA, policy=partial(PriorityScheduler, priority=prio[:-1]))
    with pytest.raises(ValueError, match="class_kv_blocks"):
        simulate(work, REPLICA, policy=partial(PriorityScheduler, priority=prio, class_kv_blocks={1: -1}))


def two_tenants(chat_from=0.0, chat_rate=40.0, seconds=15.0):
    doc = Workload.generate(int(8 * seconds), Poisson(8.0), Fixed(8000), Fixed(100), seed=1)
    chat = Workload.generate(int(chat_rate * (seconds - chat_from)), Poisson(chat_rate), Fixed(300), Fixed(100), seed=2)
    arr = np.concatenate([doc.arrival_s, chat.arrival_s + chat_from])
    order = np.argsort(arr, kind="stable")
    tenant = np.concatenate([np.zeros(len(doc), int), np.ones(len(chat), int)])[order]
    return Workload(arr[order], np.concatenate([doc.prompt_tokens, chat.prompt_tokens])[order],
                    np.concatenate([doc.output_tokens, chat.output_tokens])[order], tenant=tenant), tenant


def test_request_fair_admits_equal_counts_and_token_fair_favours_cheap_requests():
    work, tenant = two_tenants()
    rf = simulate(work, REPLICA, policy=partial(FairScheduler, tenant=tenant, per_request=1.0,
                                                prefill_weight=0.0, decode_weight=0.0))
    tf = simulate(work, REPLICA, policy=partial(FairScheduler, tenant=tenant))
    window = lambda r, t: int(((r.admitted_s > 3) & (r.admitted_s < 12) & (tenant == t)).sum())
    assert abs(window(rf, 0) - window(rf, 1)) <= 0.2 * window(rf, 0) + 2  # one for one while both wait
    assert window(tf, 1) > 3 * window(rf, 1)  # token weights serve many more chat requests


def test_counter_lift_stops_banking():
    work, tenant = two_tenants(chat_from=7.0, chat_rate=100.0)

    def docs_after_return(lift):
        res = simulate(work, REPLICA, policy=partial(FairScheduler, tenant=tenant, lift=lift))
        docs = res.admitted_s[tenant == 0]
        return int(((docs > 7.0) & (docs < 10.0)).sum())

    assert docs_after_return(lift=True) > docs_after_return(lift=False) + 2


def test_fair_bad_inputs():
    work, tenant = two_tenants(seconds=1.0)
    with pytest.raises(ValueError, match="tenant has"):
        simulate(work, REPLICA, policy=partial(FairScheduler, tenant=tenant[:-1]))
    with pytest.raises(ValueError, match="decode_weight"):
        simulate(work, REPLICA, policy=partial(FairScheduler, tenant=tenant, decode_weight=-2))
