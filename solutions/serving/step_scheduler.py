"""A vLLM-v1-style scheduler: one token budget per step, running requests first, then FCFS.

The policy, as vLLM's v1 `Scheduler.schedule` runs it
(vllm-project/vllm@b4622cf924bc72504aed99e486062d6633fde39e:vllm/v1/core/sched/scheduler.py):

1. Running requests, in admission order, each get the tokens they still need (one for a decode,
   the rest of the prompt, capped by what is left of the budget, for a chunked prefill).
   If the KV pool cannot hold a request's new tokens, the most recently admitted running request
   is preempted (`self.running.pop()`) until it fits or the request preempts itself. A preempted
   request frees all its blocks, forgets its progress (`num_computed_tokens = 0`: recompute) and
   goes back to the *front* of the waiting queue (`prepend_request`).
2. If nothing was preempted this step, waiting requests are admitted in FCFS order while budget,
   `max_num_seqs` and free blocks last; the head that does not fit stops admission (no skipping).
   A new request starts from its prefix-cache hit (whole blocks), the rest is prefill.
3. Prefix caching: a request's leading `prefix_hit_tokens` are shared with its prefix group. The
   first request of a group computes them; when its prompt is done its blocks stay in the pool as
   the group's cached blocks, and later requests hit them. A referenced group is pinned; an
   unreferenced one is still counted free (as vLLM's free queue counts cached blocks with no
   reference) and is evicted, least recently used first, when an allocation needs its blocks.

`max_num_batched_tokens >= max_num_seqs` is required (vLLM raises otherwise:
vllm-project/vllm@01230b40128e570a58e54e75f7e55c4d5cd9246d:vllm/config/scheduler.py), and with
`long_prefill_token_threshold` at its default 0 a partial prefill takes all the budget left. So
every running decode is scheduled every step, and at most one request is mid-prefill: the last
admitted. The scheduler uses that to keep decodes as aggregates (count, sum of contexts, a
histogram of block offsets, a heap of finish steps) and spends O(1) per step on them, not O(batch).

Interface (the shape of vLLM's `add_request` / `schedule` / `update_from_output`):
    add(rid)                     a request arrived
    plan = schedule(step)        decide this step's tokens, allocate KV blocks, preempt
    finished = update(plan, step)  after the forward pass: advance progress, sample, finish
Another policy (q44's, a priority policy) can implement the same three methods.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from solutions.serving.kv_pool import KVPool

WAITING, PREFILL, DECODE, DONE = 0, 1, 2, 3


@dataclass(frozen=True)
class SchedulerConfig:
    """Defaults: vLLM's API-server defaults for a >= 70 GiB GPU that is not an A100 (H100, H200):
    8192 batched tokens, 1024 sequences
    (vllm-project/vllm@99d7eb5d6a512cfcc5a2b104f24ebf2d6cda772b:vllm/engine/arg_utils.py)."""

    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 1024
    chunked_prefill: bool = True

    def __post_init__(self):
        for name in ("max_num_batched_tokens", "max_num_seqs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ValueError(f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be >= max_num_seqs "
                             f"({self.max_num_seqs}), as vLLM requires")


@dataclass
class StepPlan:
    """What one step runs: `decodes` sequences of one token over `decode_context` cached tokens in
    total, plus prefill `chunks` (rid, new tokens, cached tokens), and who was preempted."""

    decodes: int = 0
    decode_context: int = 0
    chunks: list = field(default_factory=list)
    preempted: list = field(default_factory=list)
    admitted: int = 0

    @property
    def prefill_tokens(self) -> int:
        return sum(c for _, c, _ in self.chunks)

    @property
    def tokens(self) -> int:
        return self.decodes + self.prefill_tokens

    @property
    def seqs(self) -> int:
        return self.decodes + len(self.chunks)

    @property
    def cached(self) -> int:
        return self.decode_context + sum(p for _, _, p in self.chunks)

    @property
    def pairs(self) -> float:
        return self.decode_context + self.decodes + sum(c * p + c * (c + 1) / 2 for _, c, p in self.chunks)

    def __bool__(self) -> bool:
        return bool(self.decodes or self.chunks)


class FCFSScheduler:
    """vLLM v1's FCFS policy over a KV block pool, with recompute preemption."""

    # Admission never skips the queue's head, so while the head is blocked no later arrival can be
    # admitted: the simulator may run decode-only steps without ingesting arrivals. A policy that
    # can admit past a blocked head sets this False.
    fifo_admission = True

    def __init__(self, config: SchedulerConfig, pool: KVPool, prompt_tokens, output_tokens, prefix_hit_tokens,
                 prefix_group=None):
        self.config, self.pool = config, pool
        bs = self.bs = pool.block_size
        n = len(prompt_tokens)
        self.prompt = [int(x) for x in prompt_tokens]
        self.out_len = [int(x) for x in output_tokens]
        # shared prefixes count in whole blocks, and never the last prompt token (it must run to sample)
        self.prefix_blocks = [min(int(h), p - 1) // bs for h, p in zip(prefix_hit_tokens, self.prompt)]
        self.group = [0] * n if prefix_group is None else [int(g) for g in prefix_group]
        self.hit_blocks = [0] * n  # blocks of this request the group's cache owns (set at admission)
        self.hit_tokens = [0] * n  # prompt tokens the last admission found cached
        self.resident: dict = {}  # group -> blocks cached in the pool
        self.refs: dict = {}  # group -> running requests that use it (pinned while > 0)
        self.lru: dict = {}  # unreferenced resident groups, least recently used first
        self.evictable = 0  # blocks of unreferenced resident groups: counted in `free`
        self.evicted_blocks = 0
        self.free = pool.num_blocks
        self.waiting: deque = deque()
        self.running: dict = {}  # insertion-ordered: admission order; the last key is the newest
        self.partial = None  # the one request mid-prefill, if any (always the newest running)
        # per request
        self.status = [WAITING] * n
        self.computed = [0] * n  # for non-decodes; a decode's context at step s is s + offset
        self.outputs = [0] * n  # tokens sampled so far (for a decode: as of its `joined` step)
        self.held = [0] * n  # private KV blocks (for non-decodes; decodes derive it)
        self.offset = [0] * n  # decode context at step s is s + offset
        self.joined = [0] * n  # step at which it sampled the token that made it a decode
        self.epoch = [0] * n  # invalidates stale heap entries after a preemption
        self.admitted_step = [-1] * n
        self.first_token_step = [-1] * n
        self.finish_step = [-1] * n
        self.preemptions = [0] * n
        self.segments: list = []  # (rid, first step, tokens): runs of consecutive sampling steps
        # decode aggregates
        self.n_decodes = 0
        self.offset_sum = 0
        self.by_phase = [0] * bs  # decodes by offset mod block_size: who needs a block at step s
        self.finishing: list = []  # heap of (finish step, rid, epoch)
        self._needs = None  # the last decode run's cumulative block needs

    # ---- queries ----------------------------------------------------------------------
    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def peak_blocks(self, rid: int) -> int:
        """Private blocks a request holds just before it finishes (its last token is never cached)."""
        return self.pool.blocks_for(self.prompt[rid] + self.out_len[rid] - 1) - self.hit_blocks[rid]

    # ---- the three-method interface --------------------------------------------------
    def add(self, rid: int) -> None:
        self.waiting.append(rid)

    def schedule(self, step: int) -> StepPlan:
        cfg, bs = self.config, self.bs
        plan = StepPlan()
        budget = cfg.max_num_batched_tokens
        if self.n_decodes:
            need = self.by_phase[-step % bs]  # decodes whose context fills a block exactly
            if need <= self.free:
                self.free -= need
                self._evict_to_fit()
            else:
                self._allocate_decodes_one_by_one(step, plan)
            plan.decodes = self.n_decodes
            plan.decode_context = self.n_decodes * step + self.offset_sum
            budget -= self.n_decodes
        rid = self.partial
        if rid is not None and budget > 0:
            c = min(self.prompt[rid] + self.outputs[rid] - self.computed[rid], budget)
            extra = self.pool.blocks_for(self.computed[rid] + c) - self.hit_blocks[rid] - self.held[rid]
            if extra <= self.free:
                self.free -= extra
                self._evict_to_fit()
                self.held[rid] += extra
                plan.chunks.append((rid, c, self.computed[rid]))
                budget -= c
            else:  # it is the newest running request, so it preempts itself
                self._preempt(self._pop_newest(), step, plan)
        if plan.preempted:
            return plan
        waiting, running = self.waiting, self.running
        while waiting and budget > 0 and len(running) < cfg.max_num_seqs:
            rid = waiting[0]
            hit = min(self.prefix_blocks[rid], self.resident.get(self.group[rid], 0))
            cached = hit * bs
            c = self.prompt[rid] + self.outputs[rid] - cached
            if c > budget:
                if not cfg.chunked_prefill:
                    break
                c = budget
            blocks = self.pool.blocks_for(cached + c) - hit
            if blocks + self._pin_cost(rid) > self.free:
                break
            waiting.popleft()
            running[rid] = None
            self._reference(rid, step)
            self.hit_blocks[rid] = hit
            self.hit_tokens[rid] = cached
            self.free -= blocks
            self._evict_to_fit()
            self.held[rid] = blocks
            self.computed[rid] = cached
            self.status[rid] = PREFILL
            if self.admitted_step[rid] < 0:
                self.admitted_step[rid] = step
            plan.chunks.append((rid, c, cached))
            plan.admitted += 1
            budget -= c
        return plan

    def update(self, plan: StepPlan, step: int) -> list:
        """After the step's forward pass: every scheduled decode sampled a token; a chunk that
        completes its prompt samples the first token. Returns the requests that finished."""
        finished = []
        heap = self.finishing
        while heap and heap[0][0] == step:
            _, rid, epoch = heapq.heappop(heap)
            if epoch == self.epoch[rid]:
                ctx = step + self.offset[rid] + 1
                self._leave_decodes(rid)
                self.free += self.pool.blocks_for(ctx) - self.hit_blocks[rid]
                self._release(rid, step)
                self.segments.append((rid, self.joined[rid], step - self.joined[rid] + 1))
                self.outputs[rid] = self.out_len[rid]
                self._finish(rid, step, finished)
        for rid, c, cached in plan.chunks:
            done = cached + c
            self.computed[rid] = done
            if done < self.prompt[rid] + self.outputs[rid]:
                self.partial = rid
                continue
            if self.partial == rid:
                self.partial = None
            self._cache_prefix(rid)
            self.outputs[rid] += 1
            if self.first_token_step[rid] < 0:
                self.first_token_step[rid] = step
            remaining = self.out_len[rid] - self.outputs[rid]
            if remaining == 0:
                self.free += self.held[rid]
                self.held[rid] = 0
                self._release(rid, step)
                self.segments.append((rid, step, 1))
                self._finish(rid, step, finished)
                continue
            # becomes a decode: at step s its context is s + offset
            offset = done - (step + 1)
            self.status[rid] = DECODE
            self.offset[rid] = offset
            self.joined[rid] = step
            self.held[rid] = 0
            self.n_decodes += 1
            self.offset_sum += offset
            self.by_phase[offset % self.bs] += 1
            heapq.heappush(heap, (step + remaining, rid, self.epoch[rid]))
        return finished

    # ---- decode runs: many identical steps at once ---------------------------------------
    def decode_run_length(self, step: int, limit: int) -> int:
        """After `schedule(step)` returned a decode-only plan (no chunk, no preemption, nothing
        admitted): how many steps, counting this one, repeat it exactly, up to `limit`. Nothing
        changes until a decode finishes or the pool runs out: the admission test (budget, sequence
        cap, free blocks) can only get harder while decodes grow. Arrivals to an empty queue are
        the caller's bound: the caller knows the clock."""
        if self.partial is not None or not self.n_decodes:
            return 1
        heap, epoch = self.finishing, self.epoch
        while heap[0][2] != epoch[heap[0][1]]:
            heapq.heappop(heap)  # stale: preempted since it was pushed
        k = min(limit, heap[0][0] - step + 1)
        if k > 1:
            needs = self._needs = self._run_needs(step, k)
            if needs[-1] > self.free:
                k = 1 + int(np.searchsorted(needs, self.free, side="right"))
        return k

    def _run_needs(self, step: int, k: int) -> np.ndarray:
        """Cumulative new blocks the decodes need over steps step+1 .. step+k-1."""
        phase = np.array(self.by_phase)
        return np.cumsum(phase[-(step + np.arange(1, k)) % self.bs])

    def run_decodes(self, step: int, k: int) -> list:
        """Commit steps step+1 .. step+k-1 of a decode run (their KV blocks); return the blocks
        in use after each step of the run's allocation, this step included."""
        used = self.pool.num_blocks - self.free
        if k == 1:
            return [used]
        needs = self._needs[:k - 1]  # from decode_run_length(step, ...), just before
        self.free -= int(needs[-1])
        self._evict_to_fit()
        return [used] + (used + needs).tolist()

    # ---- internals ---------------------------------------------------------------------
    def _finish(self, rid, step, finished):
        self.status[rid] = DONE
        self.finish_step[rid] = step
        del self.running[rid]
        finished.append(rid)

    def _leave_decodes(self, rid):
        offset = self.offset[rid]
        self.n_decodes -= 1
        self.offset_sum -= offset
        self.by_phase[offset % self.bs] -= 1
        self.epoch[rid] += 1

    def _pop_newest(self) -> int:
        rid = next(reversed(self.running))
        del self.running[rid]
        return rid

    def _preempt(self, rid, step, plan):
        """Recompute preemption: free every block, forget progress, back to the queue's front."""
        if self.status[rid] == DECODE:
            ctx = step + self.offset[rid]
            self._leave_decodes(rid)
            self.free += self.pool.blocks_for(ctx) - self.hit_blocks[rid]
            sampled = step - self.joined[rid]  # tokens sampled since (and including) the join step
            self.segments.append((rid, self.joined[rid], sampled))
            self.outputs[rid] += sampled - 1
        else:
            self.free += self.held[rid]
            if self.partial == rid:
                self.partial = None
        self._release(rid, step)
        self.held[rid] = 0
        self.computed[rid] = 0
        self.status[rid] = WAITING
        self.preemptions[rid] += 1
        self.waiting.appendleft(rid)
        plan.preempted.append(rid)

    def _allocate_decodes_one_by_one(self, step, plan):
        """The rare path: the decodes' new blocks do not all fit. Walk the running decodes in
        admission order as vLLM does, preempting the newest request until each one fits."""
        bs = self.bs
        for rid in list(self.running):
            if self.status[rid] != DECODE:
                break  # only the partial prefill can follow the decodes
            if rid not in self.running:
                break  # preempted from the tail: everything after it is gone too
            if (step + self.offset[rid]) % bs:
                continue  # room left in its last block
            while self.free == 0:
                victim = self._pop_newest()
                self._preempt(victim, step, plan)
                if victim == rid:
                    break
            if self.status[rid] != DECODE:
                break
            self.free -= 1
            self._evict_to_fit()

    # ---- the prefix cache: shared blocks per group -------------------------------------------
    def _pin_cost(self, rid) -> int:
        """Blocks that leave the free count if `rid` is admitted: its group's cached blocks, if
        nobody references them yet (they were evictable, so counted free)."""
        g = self.group[rid]
        return self.resident.get(g, 0) if self.prefix_blocks[rid] and not self.refs.get(g) else 0

    def _reference(self, rid, step):
        if not self.prefix_blocks[rid]:
            return
        g = self.group[rid]
        if not self.refs.get(g):
            cached = self.lru.pop(g, 0)
            self.evictable -= cached
            self.free -= cached
        self.refs[g] = self.refs.get(g, 0) + 1

    def _release(self, rid, step):
        if not self.prefix_blocks[rid]:
            return
        g = self.group[rid]
        self.refs[g] -= 1
        if self.refs[g] == 0 and self.resident.get(g, 0):
            self.lru[g] = self.resident[g]  # most recently used: the end of the queue
            self.evictable += self.resident[g]
            self.free += self.resident[g]

    def _cache_prefix(self, rid):
        """The prompt is computed: its prefix blocks beyond what the group has cached become the
        group's (they leave the request's private blocks; the group is pinned by this request)."""
        g, want = self.group[rid], self.prefix_blocks[rid]
        grow = want - self.resident.get(g, 0)
        if grow > 0 and want > self.hit_blocks[rid]:
            self.resident[g] = want
            self.hit_blocks[rid] += grow
            if self.status[rid] != DECODE:
                self.held[rid] -= grow

    def _evict_to_fit(self):
        """Keep cached-but-unreferenced blocks within the free count: evict whole groups, least
        recently used first, once allocations dig into them."""
        while self.evictable > self.free:
            g, blocks = next(iter(self.lru.items()))
            del self.lru[g]
            self.evictable -= blocks
            self.resident[g] = 0
            self.evicted_blocks += blocks
