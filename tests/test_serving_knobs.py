"""Two vLLM scheduler knobs in the simulator, pinned step by step.

- `long_prefill_token_threshold` T caps the tokens one request schedules in a step, so the budget a
  long prompt leaves goes to the next requests (several prompts mid-prefill at once); it is not
  applied when only one request is running or waiting; 0 (the default) changes nothing.
  (`vllm==0.33.0:vllm/v1/core/sched/scheduler.py` `if 0 < long_prefill_token_threshold < num_new_tokens:`)
- vLLM's priority policy preempts the running request with the largest (priority, arrival time),
  even an older one already given its block this step, and a request that preempts itself lets
  the others run (`max(self.running, key=lambda r: (r.priority, r.arrival_time))`).
"""

from functools import partial

import numpy as np
import pytest

from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_8B
from solutions.serving import LogNormal, Poisson, Replica, SchedulerConfig, Workload, simulate
from solutions.serving.policies import PriorityScheduler, ShortestPrefillFirst


def _replica(**kw):
    return Replica.of(LLAMA_3_1_8B, H100_SXM, **kw)


# ---- long_prefill_token_threshold ---------------------------------------------------------

def test_the_threshold_splits_the_budget_across_prompts():
    """Three 4,000-token prompts at once, budget 2,048, T = 512: each gets 512 tokens a step (1,536
    in all), so all three finish their prompt together after 8 steps (7 x 512 + 416). Without the
    threshold the first takes the whole budget and they finish one after another."""
    work = Workload(np.zeros(3), 4000, 2)
    capped = simulate(work, _replica(max_num_batched_tokens=2048, max_num_seqs=64, long_prefill_token_threshold=512))
    s = capped.steps
    assert list(s["prefill_tokens"][:8]) == [1536] * 7 + [3 * 416]
    assert np.all(capped.first_token_s == s["end_s"][7])
    plain = simulate(work, _replica(max_num_batched_tokens=2048, max_num_seqs=64))
    assert plain.steps["prefill_tokens"][0] == 2048
    assert len(set(plain.first_token_s)) == 3


def test_a_lone_request_is_not_capped():
    work = Workload(np.zeros(1), 4000, 2)
    s = simulate(work, _replica(max_num_batched_tokens=2048, long_prefill_token_threshold=512)).steps
    assert list(s["prefill_tokens"][:2]) == [2048, 1952]


def test_a_short_prompt_behind_a_long_one_starts_sooner():
    """A 16,000-token prompt, then a 100-token prompt 1 ms later, budget 2,048: without the cap the
    short one waits for the long prefill's last chunk; with T = 512 it is admitted in the next step."""
    work = Workload(np.array([0.0, 0.001]), np.array([16000, 100]), np.array([50, 50]))
    plain = simulate(work, _replica(max_num_batched_tokens=2048))
    capped = simulate(work, _replica(max_num_batched_tokens=2048, long_prefill_token_threshold=512))
    assert plain.admitted_s[1] == plain.steps["start_s"][7]  # beside the last of A's 8 chunks
    assert capped.admitted_s[1] == capped.steps["start_s"][1]
    assert capped.ttft[1] < 0.5 * plain.ttft[1]
    assert capped.ttft[0] > plain.ttft[0]  # the price: the long prompt takes more, smaller steps
    # step 0: A is alone, so uncapped; step 1: A's 512 beside B's whole prompt
    assert list(capped.steps["prefill_tokens"][:2]) == [2048, 512 + 100]


def test_the_threshold_defaults_to_off_and_refuses_bad_values():
    assert SchedulerConfig().long_prefill_token_threshold == 0
    work = Workload.generate(300, Poisson(20.0), LogNormal(2000, 1.0), LogNormal(100, 1.0), seed=4)
    a = simulate(work, _replica())
    b = simulate(work, _replica(long_prefill_token_threshold=0))
    assert np.array_equal(a.token_s, b.token_s)
    with pytest.raises(ValueError, match="long_prefill_token_threshold"):
        SchedulerConfig(long_prefill_token_threshold=-1)
    with pytest.raises(ValueError, match="long_prefill_token_threshold"):
        simulate(work, _replica(long_prefill_token_threshold=256), policy=ShortestPrefillFirst)


def test_a_capped_busy_run_keeps_every_invariant():
    """Many prompts mid-prefill at once, a pool small enough to preempt them: budget, pool and
    token accounting still hold (Result.from_run checks every token), Little's law too."""
    work = Workload.generate(1500, Poisson(30.0), LogNormal(1500, 1.0), LogNormal(200, 1.0), seed=5)
    res = simulate(work, _replica(kv_blocks=1500, max_num_batched_tokens=4096, max_num_seqs=256,
                                  long_prefill_token_threshold=256))
    s = res.steps
    assert res.preemptions.sum() > 0
    assert np.all(s["decode_tokens"] + s["prefill_tokens"] <= 4096)
    assert np.all(s["kv_blocks_used"] <= 1500)
    assert res.littles_law()["rel_error"] < 1e-6


# ---- priority preemption -------------------------------------------------------------------

def test_priority_preempts_the_lowest_priority_even_if_older():
    """Pool of 4 blocks of 4 tokens, 4-token prompts, 8 outputs: A (priority 1) arrives first and
    is admitted at step 0, B (priority 0) during that step and is admitted at step 1. At step 5 A
    needs a third block and none is free. Newest-first preempts B; vLLM's priority policy
    preempts A (the largest (priority, arrival)): A preempts itself, B runs on and finishes at step
    8, and A recomputes its 9 tokens at step 9 (prefix caching off: nothing of A is kept)."""
    replica = _replica(kv_blocks=4, block_size=4, max_num_seqs=4, enable_prefix_caching=False)
    work, prio = Workload(np.array([0.0, 1e-4]), 4, 8), np.array([1, 0])
    newest = simulate(work, replica, policy=partial(PriorityScheduler, priority=prio))
    assert list(newest.preemptions) == [0, 1]
    vllm = simulate(work, replica, policy=PriorityScheduler.vllm(prio))
    end = vllm.steps["end_s"]
    assert list(vllm.preemptions) == [1, 0]
    assert np.array_equal(vllm.token_times(1), end[1:9])
    assert np.array_equal(vllm.token_times(0), end[[0, 1, 2, 3, 4, 9, 10, 11]])
    assert vllm.steps["prefill_tokens"][9] == 4 + 5


def test_a_victim_already_given_its_block_frees_it_too():
    """Pool of 5 blocks. A (priority 1, 4-token prompt) is admitted at step 0, B (priority 0,
    5-token prompt) at step 1: both then need a new block at step 5. Walking in admission order,
    A gets the last free block, then B needs one: A is preempted with its new block and B runs
    on. When A recomputes alone (prefix caching off), its 9 tokens hold exactly 3 blocks: nothing
    leaked."""
    replica = _replica(kv_blocks=5, block_size=4, max_num_seqs=4, enable_prefix_caching=False)
    work = Workload(np.array([0.0, 1e-4]), np.array([4, 5]), 8)
    res = simulate(work, replica, policy=PriorityScheduler.vllm(np.array([1, 0])))
    s = res.steps
    assert list(res.preemptions) == [1, 0]
    assert list(s["kv_blocks_used"][4:7]) == [4, 3, 3]  # step 5: B's 3 blocks once A left with its 3
    readmit = int(np.flatnonzero(s["prefill_tokens"] == 9)[0])
    assert s["kv_blocks_used"][readmit] == 3


def test_vllm_priority_spares_the_high_class_from_preemption():
    """Chat (priority 0) and long jobs (priority 1) on a pool that fills: newest-first preemption
    hits chat requests (they are admitted first, so often the newest); vLLM's policy takes jobs."""
    chat = Workload.generate(600, Poisson(6.0), LogNormal(500, 0.5), LogNormal(300, 0.5), seed=1)
    jobs = Workload.generate(100, Poisson(1.0), LogNormal(2000, 0.3), LogNormal(1500, 0.3), seed=2)
    arr = np.concatenate([chat.arrival_s, jobs.arrival_s])
    order = np.argsort(arr, kind="stable")
    prio = np.concatenate([np.zeros(len(chat), int), np.ones(len(jobs), int)])[order]
    work = Workload(arr[order], np.concatenate([chat.prompt_tokens, jobs.prompt_tokens])[order],
                    np.concatenate([chat.output_tokens, jobs.output_tokens])[order], priority=prio)
    replica = _replica(kv_blocks=4000, max_num_seqs=256)
    newest = simulate(work, replica, policy=partial(PriorityScheduler, priority=prio))
    vllm = simulate(work, replica, policy=PriorityScheduler.vllm(prio))
    high = prio == 0
    assert newest.preemptions[high].sum() > 50
    assert vllm.preemptions[high].sum() == 0 and vllm.preemptions[~high].sum() > 50
    with pytest.raises(ValueError, match="preemption must be"):
        simulate(work, replica, policy=partial(PriorityScheduler, priority=prio, preemption="oldest"))
