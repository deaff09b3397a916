"""One replica, step by step: arrivals join the queue, the scheduler plans a step, the kit's step
model prices it, the clock advances, tokens are sampled.

    replica = Replica.of(LLAMA_3_1_8B, H100_SXM)
    result = simulate(workload, replica)
    result.summary(slo)

Time is continuous and exact: a step starts when the previous one ends (or, if the replica is
idle, at the next arrival); an arrival that lands mid-step is seen by the next step's scheduler.
Nothing here is random: the workload carries the randomness, so a run is a function of its seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solutions.capacity import VLLM_GPU_MEMORY_UTILIZATION
from solutions.hardware import GPU
from solutions.models import Model
from solutions.serving.kv_pool import KVPool
from solutions.serving.metrics import Result
from solutions.serving.step_scheduler import FCFSScheduler, SchedulerConfig
from solutions.serving.step_time import ServiceTime
from solutions.serving.workload import Workload
from solutions.step_defaults import SERVING_STACK_S, VLLM_DEFAULTS
from solutions.step_model import BF16, Precision, StepModel
from solutions.units import GiB


@dataclass(frozen=True)
class Replica:
    """A serving replica: how long a step takes, how the scheduler is configured, how much KV fits,
    and the time a request spends in the serving stack outside the engine's steps."""

    step_time: object  # a callable: StepPlan -> seconds (a StepModel, or ServiceTime)
    scheduler: SchedulerConfig
    kv_pool: KVPool
    name: str = ""
    serving_stack_s: float = 0.0  # added to every TTFT and E2E: HTTP, tokenizing, detokenizing

    def __post_init__(self):
        if not self.serving_stack_s >= 0:
            raise ValueError(f"serving_stack_s must be >= 0, got {self.serving_stack_s!r}")

    @classmethod
    def of(cls, model: Model, gpu: GPU, tp: int = 1, precision: Precision = BF16, *,
           step_model: StepModel | None = None, max_num_batched_tokens: int = 8192, max_num_seqs: int = 1024,
           chunked_prefill: bool = True, gpu_memory_utilization: float = VLLM_GPU_MEMORY_UTILIZATION,
           non_kv_bytes: float = 2 * GiB, block_size: int = 16, kv_blocks: int | None = None,
           serving_stack_s: float | None = None, long_prefill_token_threshold: int = 0,
           enable_prefix_caching: bool = True, regime: str = "vllm-defaults") -> "Replica":
        """A replica named by its hardware and model, priced by the kit's calibrated step model
        (`StepModel.of(model, gpu, tp, precision, regime=regime)` unless `step_model` is given).

        `regime` is "vllm-defaults" unless asked otherwise: the simulator replays vLLM, so by default
        it is priced as vLLM runs at its defaults (per-step time outside kernels fitted on published
        vLLM runs, docs/fidelity.ipynb) with that regime's serving-stack time; "kernel-ceiling"
        prices a well-tuned engine (the kernels plus one small constant per step) with
        `step_defaults.SERVING_STACK_S`. `serving_stack_s` overrides the regime's. The KV pool
        follows from the memory left after the weights and `non_kv_bytes` (the kit's
        `solutions.capacity` sizing) unless `kv_blocks` fixes it. `long_prefill_token_threshold`
        caps the prompt tokens one request schedules per step (vLLM's knob; 0, its default, is off);
        `enable_prefix_caching` (vLLM's default, on) lets prefix hits and a preempted request's own
        cached blocks save prefill."""
        if not isinstance(precision, Precision):
            raise TypeError(f"precision must be a solutions.step_model.Precision (BF16, FP8, ...), got {precision!r}")
        step_time = step_model if step_model is not None else StepModel.of(model, gpu, tp, precision, regime=regime)
        if serving_stack_s is None:
            named = getattr(step_time, "regime", regime)
            serving_stack_s = VLLM_DEFAULTS.serving_stack_s if named == "vllm-defaults" else SERVING_STACK_S
        pool = (KVPool(kv_blocks, block_size) if kv_blocks is not None else
                KVPool.for_replica(model, gpu, gpu_memory_utilization=gpu_memory_utilization, tp=tp,
                                   non_kv_bytes=non_kv_bytes, block_size=block_size,
                                   weight_dtype=precision.weight, kv_dtype=precision.kv))
        config = SchedulerConfig(max_num_batched_tokens, max_num_seqs, chunked_prefill, long_prefill_token_threshold,
                                 enable_prefix_caching)
        return cls(step_time, config, pool, name=f"{model.name} on {tp}x {gpu.name}", serving_stack_s=serving_stack_s)

    @classmethod
    def single_server(cls) -> "Replica":
        """A FCFS single-server queue: one job at a time, each lasting its own service time.
        Use with `Workload.single_server` to check the simulator against queueing closed forms."""
        return cls(None, SchedulerConfig(1, 1), KVPool(1, 1), name="single server")


def _validate(workload: Workload, replica: Replica, scheduler: FCFSScheduler):
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a Workload, got {type(workload).__name__}")
    pool, cfg = replica.kv_pool, replica.scheduler
    peak = -(-(workload.prompt_tokens + workload.output_tokens - 1) // pool.block_size)  # even without a hit
    worst = int(np.argmax(peak))
    if peak[worst] > pool.num_blocks:
        raise ValueError(
            f"request {worst} cannot fit in the KV pool: prompt_tokens ({workload.prompt_tokens[worst]}) + "
            f"output_tokens ({workload.output_tokens[worst]}) need {peak[worst]} blocks of {pool.block_size} tokens, "
            f"kv_pool.num_blocks is {pool.num_blocks}")
    if not cfg.chunked_prefill:
        longest = int(np.argmax(workload.prompt_tokens + workload.output_tokens))
        need = workload.prompt_tokens[longest] + workload.output_tokens[longest] - 1
        if need > cfg.max_num_batched_tokens:
            raise ValueError(
                f"without chunked prefill a request must fit in one step: request {longest} may need {need} tokens "
                f"(after a preemption), max_num_batched_tokens is {cfg.max_num_batched_tokens}")
    if replica.step_time is None and workload.service_s is None:
        raise ValueError("a single-server replica needs a workload with service_s (Workload.single_server)")


def simulate(workload: Workload, replica: Replica, policy=FCFSScheduler) -> Result:
    """Run every request of `workload` to completion on `replica`; return what happened.
    `policy` builds the scheduler: `FCFSScheduler` or anything with its constructor and methods
    (a subclass from `solutions.serving.policies`, or a functools.partial of one)."""
    if not isinstance(replica, Replica):
        raise TypeError(f"replica must be a Replica, got {type(replica).__name__}")
    if not callable(policy):
        raise TypeError(f"policy must be a scheduler class such as FCFSScheduler, got {policy!r}")
    sched = policy(replica.scheduler, replica.kv_pool, workload.prompt_tokens, workload.output_tokens,
                   workload.prefix_hit_tokens, workload.prefix_group)
    _validate(workload, replica, sched)
    timer = replica.step_time or ServiceTime(workload.service_s.tolist())
    decode_run = getattr(timer, "decode_run_seconds", None)  # None: no vectorised decode price
    arrival_arr = workload.arrival_s
    arrivals = arrival_arr.tolist()
    n = len(arrivals)
    pool_blocks = replica.kv_pool.num_blocks

    start, end, decodes, context, prefill, seqs, kv_used, waiting, running = ([] for _ in range(9))
    t = arrivals[0]
    i = 0  # next arrival to ingest
    in_system = 0
    area = 0.0  # integral of the number in system over time, from the engine's own counters
    step = 0
    stalled = 0
    while i < n or sched.has_work():
        if not sched.has_work() and arrivals[i] > t:
            t = arrivals[i]  # idle: jump to the next arrival
        sched.now = t  # the clock, for a policy that reads it (ShortestPrefillFirst's aging)
        while i < n and arrivals[i] <= t:
            area += t - arrivals[i]
            in_system += 1
            sched.add(i)
            i += 1
        plan = sched.schedule(step)
        if not plan:  # a step that only preempted: vLLM runs no forward pass, it schedules again
            stalled += 1
            if stalled > 2:
                raise RuntimeError("the scheduler made no progress; this is a bug in the simulator")
            continue
        stalled = 0
        k = 1
        if plan.decodes and not plan.chunks and not plan.preempted and decode_run is not None:
            k = sched.decode_run_length(step, limit=1 << 40)
        if k > 1:
            # A decode-only step that admitted nothing repeats until a decode finishes, the pool
            # runs out, or (if nobody waits) the next arrival: price the whole run in one go.
            blocked_head = sched.waiting and getattr(sched, "fifo_admission", True)
            bound = arrivals[i] if i < n and not blocked_head else math.inf
            n_dec, off = plan.decodes, sched.offset_sum
            ctx = n_dec * np.arange(step, step + k, dtype=np.int64) + off
            ends = t + np.cumsum(decode_run(n_dec, ctx))
            k = 1 + int(np.searchsorted(ends[:-1], bound, side="left"))  # steps that start before it
            t0 = t
            start.append(t)
            start.extend(ends[:k - 1].tolist())
            end.extend(ends[:k].tolist())
            t = end[-1]
            context.extend(ctx[:k].tolist())
            area += in_system * (t - t0)
            decodes.extend([n_dec] * k)
            prefill.extend([0] * k)
            seqs.extend([n_dec] * k)
            kv_used.extend(sched.run_decodes(step, k))
            # arrivals during the run queue behind a blocked head: count them from their arrival
            starts = np.asarray(start[-k:])
            waiting.extend((len(sched.waiting) + np.searchsorted(arrival_arr, starts, side="right") - i).tolist())
            running.extend([len(sched.running)] * k)
            step += k - 1
        else:
            dt = timer(plan)
            area += in_system * dt
            start.append(t)
            t += dt
            end.append(t)
            decodes.append(plan.decodes)
            context.append(plan.decode_context)
            prefill.append(plan.prefill_tokens)
            seqs.append(plan.seqs)
            kv_used.append(pool_blocks - sched.free)
            waiting.append(len(sched.waiting))
            running.append(len(sched.running))
        in_system -= len(sched.update(plan, step))
        step += 1
    if in_system != 0:
        raise RuntimeError(f"{in_system} requests unaccounted for at the end of the run")
    steps = dict(start_s=start, end_s=end, decode_tokens=decodes, decode_context=context, prefill_tokens=prefill,
                 seqs=seqs, kv_blocks_used=kv_used, waiting=waiting, running=running)
    return Result.from_run(workload, replica, sched, steps, area)
