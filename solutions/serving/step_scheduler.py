"""A vLLM-v1-style scheduler: one token budget per step, running requests first, then FCFS.

The policy, as vLLM's v1 `Scheduler.schedule` runs it under the default FCFS policy
(`vllm==0.33.0:vllm/v1/core/sched/scheduler.py` `preempted_req = self.running.pop()`, then
`self._preempt_request(`, which sets `request.num_computed_tokens = 0` and calls
`self.waiting.prepend_request(request)`):

1. Running requests, in admission order, each get the tokens they still need (one for a decode,
   the rest of the prompt, capped by what is left of the budget, for a chunked prefill).
   If the KV pool cannot hold a request's new tokens, the most recently admitted running request
   is preempted (`self.running.pop()`) until it fits or the request preempts itself. A preempted
   request frees all its blocks, forgets its progress (`num_computed_tokens = 0`: recompute) and
   goes back to the *front* of the waiting queue (`prepend_request`).
2. If nothing was preempted this step, waiting requests are admitted in FCFS order while budget,
   `max_num_seqs` and free blocks last; the head that does not fit stops admission (no skipping).
   A new request starts from its prefix-cache hit (whole blocks), the rest is prefill.
3. Prefix caching (on, as in vLLM; `enable_prefix_caching=False` turns it off): a request's
   leading `prefix_hit_tokens` are shared with its prefix group. The first request of a group
   computes them; when its prompt is done its blocks stay in the pool as the group's cached
   blocks, and later requests hit them. A referenced group is pinned; an unreferenced one is still
   counted free (as vLLM's free queue counts cached blocks with no reference) and is evicted,
   least recently used first, when an allocation needs its blocks.
   A preempted request's own full blocks stay cached the same way: vLLM frees them to the free
   queue with their hashes (`vllm==0.33.0:vllm/v1/core/single_type_kv_cache_manager.py`
   `# Free blocks in reverse order so that the tail blocks are freed first.`, and
   `vllm==0.33.0:vllm/v1/core/block_pool.py` `# FIFO reuse of cached blocks for LRU eviction behavior.`),
   and readmission looks them up like any prefix (`request.num_computed_tokens == 0` then
   `get_computed_blocks`). So a recompute starts from what survived: the blocks are evicted
   least recently freed first, each request's from its tail, and a request whose shared prefix was
   evicted meanwhile loses its own blocks too (the hash chain runs through the prefix).

`max_num_batched_tokens >= max_num_seqs` is required (vLLM raises otherwise:
`vllm==0.33.0:vllm/config/scheduler.py` `if self.max_num_batched_tokens < self.max_num_seqs:`), and
with `long_prefill_token_threshold` at its default 0 (`vllm==0.33.0:vllm/config/scheduler.py`
`long_prefill_token_threshold: int = Field(default=0, ge=0)`) a partial prefill takes all the
budget left. So
every running decode is scheduled every step, and at most one request is mid-prefill: the last
admitted. The scheduler uses that to keep decodes as aggregates (count, sum of contexts, a
histogram of block offsets, a heap of finish steps) and spends O(1) per step on them, not O(batch).

4. `long_prefill_token_threshold` T > 0 caps the tokens one request schedules in a step, running
   or newly admitted, before the budget cap (`vllm==0.33.0:vllm/v1/core/sched/scheduler.py`
   `if 0 < long_prefill_token_threshold < num_new_tokens:`), and only when more than one request
   is running or waiting (`if num_eligible_reqs > 1`): the budget a long prompt leaves goes to the
   next waiting requests, so several prompts may be mid-prefill at once (kept in admission order).
   The simulator schedules the decodes first, then the prompts mid-prefill, then admissions; vLLM
   walks its running list in admission order, which differs only when the budget runs out before
   a decode admitted after a prompt still mid-prefill (the newest request absorbs the shortfall in
   both). The adaptive floor (`long_prefill_token_threshold_adaptive`) is not modelled.
5. Who is preempted is `_pop_victim`: the newest running request here; vLLM's priority policy
   (`solutions.serving.policies.PriorityScheduler`, `preemption="lowest_priority"`) takes
   `max(self.running, key=lambda r: (r.priority, r.arrival_time))` instead.

Interface (the shape of vLLM's `add_request` / `schedule` / `update_from_output`):
    add(rid)                     a request arrived
    plan = schedule(step)        decide this step's tokens, allocate KV blocks, preempt
    finished = update(plan, step)  after the forward pass: advance progress, sample, finish
    now                          the clock in seconds, set by the simulator before each step's
                                 `add` and `schedule` calls (FCFS ignores it; a policy may read it)
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
    8192 batched tokens, 1024 sequences (`vllm==0.33.0:vllm/engine/arg_utils.py`
    `# For GPUs like H100 and H200, use larger offline defaults.`, the OPENAI_API_SERVER entries)."""

    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 1024
    chunked_prefill: bool = True
    # vLLM's cap on the prompt tokens one request may schedule in a step (0: no cap, vLLM's default);
    # not applied when only one request is running or waiting. See the module docstring.
    long_prefill_token_threshold: int = 0
    # vLLM's default (`vllm==0.33.0:vllm/config/cache.py` `enable_prefix_caching: bool = True`)
    enable_prefix_caching: bool = True

    def __post_init__(self):
        for name in ("max_num_batched_tokens", "max_num_seqs"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        value = self.long_prefill_token_threshold
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"long_prefill_token_threshold must be a non-negative integer (0: off), got {value!r}")
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
    now = 0.0  # the simulator's clock (s), set before each step's add and schedule calls

    def __init__(self, config: SchedulerConfig, pool: KVPool, prompt_tokens, output_tokens, prefix_hit_tokens,
                 prefix_group=None):
        self.config, self.pool = config, pool
        bs = self.bs = pool.block_size
        n = len(prompt_tokens)
        self.prompt = [int(x) for x in prompt_tokens]
        self.out_len = [int(x) for x in output_tokens]
        # shared prefixes count in whole blocks, and never the last prompt token (it must run to sample)
        self.prefix_blocks = [min(int(h), p - 1) // bs for h, p in zip(prefix_hit_tokens, self.prompt)]
        if not config.enable_prefix_caching:
            self.prefix_blocks = [0] * n
        self.group = [0] * n if prefix_group is None else [int(g) for g in prefix_group]
        self.hit_blocks = [0] * n  # blocks of this request the group's cache owns (set at admission)
        self.hit_tokens = [0] * n  # prompt tokens the last admission found cached
        self.resident: dict = {}  # group -> blocks cached in the pool
        self.refs: dict = {}  # group -> running requests that use it (pinned while > 0)
        self.lru: dict = {}  # unreferenced resident groups, least recently used first
        self.evictable = 0  # blocks of unreferenced resident groups: counted in `free`
        self.evicted_blocks = 0
        # a preempted request's own cached blocks, in `lru` (as ("own", rid)) until readmitted or evicted
        self.own: dict = {}  # rid -> (blocks still cached, its group blocks when preempted)
        self.recompute_saved_tokens = 0  # prompt tokens a readmission found in its own cached blocks
        self.free = pool.num_blocks
        self.waiting: deque = deque()
        self.running: dict = {}  # insertion-ordered: admission order; the last key is the newest
        # requests mid-prefill, in admission order: at most one (the newest running) unless
        # long_prefill_token_threshold caps chunks below the budget
        self.partials: list = []
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
        self._decodes_allocated = -1  # the step whose decode blocks were last allocated (all of them)
        self._walk_allocated: set = set()  # decodes given their block so far in a one-by-one walk

    @property
    def partial(self):
        """The newest request mid-prefill, or None (with the threshold off there is at most one)."""
        return self.partials[-1] if self.partials else None

    @partial.setter
    def partial(self, rid):
        self.partials = [] if rid is None else [rid]

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
        # vLLM applies the threshold only when another request could use the budget
        threshold = cfg.long_prefill_token_threshold if len(self.running) + len(self.waiting) > 1 else 0
        self._walk_allocated = set()
        if self.n_decodes:
            need = self.by_phase[-step % bs]  # decodes whose context fills a block exactly
            if need <= self.free:
                self.free -= need
                self._evict_to_fit()
            else:
                self._allocate_decodes_one_by_one(step, plan)
            self._decodes_allocated = step
            budget -= self.n_decodes
        for rid in list(self.partials):
            if budget <= 0:
                break
            if rid not in self.running:
                continue  # preempted earlier in this step
            c = self.prompt[rid] + self.outputs[rid] - self.computed[rid]
            if 0 < threshold < c:
                c = threshold
            c = min(c, budget)
            extra = self.pool.blocks_for(self.computed[rid] + c) - self.hit_blocks[rid] - self.held[rid]
            while extra > self.free:
                # FCFS: the newest running request (with the threshold off, this one itself);
                # a priority policy may pick another, even one already scheduled this step
                victim = self._pop_victim()
                if self.status[victim] == DECODE:
                    budget += 1
                else:
                    for j, (r, cv, _) in enumerate(plan.chunks):
                        if r == victim:
                            budget += cv
                            del plan.chunks[j]
                            break
                self._preempt(victim, step, plan)
                if victim == rid:
                    break
            if self.status[rid] == WAITING:
                continue  # it preempted itself
            self.free -= extra
            self._evict_to_fit()
            self.held[rid] += extra
            plan.chunks.append((rid, c, self.computed[rid]))
            budget -= c
        if self.n_decodes:
            plan.decodes = self.n_decodes
            plan.decode_context = self.n_decodes * step + self.offset_sum
        if plan.preempted:
            return plan
        waiting, running = self.waiting, self.running
        while waiting and budget > 0 and len(running) < cfg.max_num_seqs:
            rid = waiting[0]
            hit = min(self.prefix_blocks[rid], self.resident.get(self.group[rid], 0))
            own = self._own_hit(rid, hit)
            cached = (hit + own) * bs
            c = self.prompt[rid] + self.outputs[rid] - cached
            if 0 < threshold < c:
                c = threshold
            if c > budget:
                if not cfg.chunked_prefill:
                    break
                c = budget
            blocks = self.pool.blocks_for(cached + c) - hit - own
            if blocks + own + self._pin_cost(rid) > self.free:
                break
            waiting.popleft()
            running[rid] = None
            self._reference(rid, step)
            self._take_own(rid, own)
            self.hit_blocks[rid] = hit
            self.hit_tokens[rid] = hit * bs
            self.free -= blocks
            self._evict_to_fit()
            self.held[rid] = blocks + own
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
                if rid not in self.partials:
                    self.partials.append(rid)
                continue
            if rid in self.partials:
                self.partials.remove(rid)
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
        if self.partials or not self.n_decodes:
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

    def _pop_victim(self) -> int:
        """The running request to preempt when a step's blocks do not fit: vLLM's FCFS policy takes
        the newest (`self.running.pop()`)."""
        return self._pop_newest()

    def _preempt(self, rid, step, plan):
        """Recompute preemption: free every block, forget progress, back to the queue's front. With
        prefix caching the full blocks of what it had computed stay cached (evictable) until the
        pool needs them."""
        if self.status[rid] == DECODE:
            ctx = step + self.offset[rid]
            kept = ctx // self.bs  # full blocks of computed KV (this step's token is not computed)
            self._leave_decodes(rid)
            got_block = ctx % self.bs == 0 and (self._decodes_allocated == step or rid in self._walk_allocated)
            self.free += self.pool.blocks_for(ctx) - self.hit_blocks[rid] + got_block  # this step's block too
            sampled = step - self.joined[rid]  # tokens sampled since (and including) the join step
            self.segments.append((rid, self.joined[rid], sampled))
            self.outputs[rid] += sampled - 1
        else:
            kept = self.computed[rid] // self.bs  # this step's chunk, if scheduled, is not computed yet
            self.free += self.held[rid]
            if rid in self.partials:
                self.partials.remove(rid)
        own = kept - self.hit_blocks[rid]
        if self.config.enable_prefix_caching and own > 0:
            self.own[rid] = (own, self.hit_blocks[rid])
            self.lru[("own", rid)] = own  # freed just now: the most recently used end
            self.evictable += own
        self._release(rid, step)
        self.held[rid] = 0
        self.computed[rid] = 0
        self.status[rid] = WAITING
        self.preemptions[rid] += 1
        self.waiting.appendleft(rid)
        plan.preempted.append(rid)

    def _allocate_decodes_one_by_one(self, step, plan):
        """The rare path: the decodes' new blocks do not all fit. Walk the running decodes in
        admission order as vLLM does, preempting a victim (`_pop_victim`: FCFS's newest) until each
        one fits. Under FCFS a victim is always later in the walk, so skipping the preempted is the
        same as vLLM's stopping at a request that preempted itself."""
        bs = self.bs
        for rid in list(self.running):
            if rid not in self.running or self.status[rid] != DECODE:
                continue  # preempted in this walk, or a prefill (handled after the decodes)
            if (step + self.offset[rid]) % bs:
                continue  # room left in its last block
            while self.free == 0:
                victim = self._pop_victim()
                self._preempt(victim, step, plan)
                if victim == rid:
                    break
            if self.status[rid] != DECODE:
                continue
            self.free -= 1
            self._walk_allocated.add(rid)
            self._evict_to_fit()

    # ---- the prefix cache: shared blocks per group, and preempted requests' own blocks ----------
    def _own_hit(self, rid, hit) -> int:
        """Blocks of `rid`'s own KV still cached from before its preemption that a readmission can
        use: none if its shared prefix was (partly) evicted since, and never its last token."""
        if rid not in self.own:
            return 0
        blocks, base = self.own[rid]
        if hit < base:
            return 0
        return max(0, min(base + blocks, (self.prompt[rid] + self.outputs[rid] - 1) // self.bs) - hit)

    def _take_own(self, rid, used):
        """Readmitted: `used` of its cached blocks become its private blocks again; the rest of the
        entry is forgotten (counted free already, as plain free blocks)."""
        if rid not in self.own:
            return
        blocks, _ = self.own.pop(rid)
        del self.lru[("own", rid)]
        self.evictable -= blocks
        self.free -= used
        self.recompute_saved_tokens += used * self.bs

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
        """Keep cached-but-unreferenced blocks within the free count: evict, least recently used
        first, once allocations dig into them: a group whole, a preempted request's own blocks
        one by one from its tail (as vLLM freed them)."""
        while self.evictable > self.free:
            g, blocks = next(iter(self.lru.items()))
            if isinstance(g, tuple):  # ("own", rid)
                take = min(blocks, self.evictable - self.free)
                self.evictable -= take
                self.evicted_blocks += take
                rid = g[1]
                if take == blocks:
                    del self.lru[g]
                    del self.own[rid]
                else:
                    self.lru[g] = blocks - take  # keeps its place in the order
                    self.own[rid] = (blocks - take, self.own[rid][1])
                continue
            del self.lru[g]
            self.evictable -= blocks
            self.resident[g] = 0
            self.evicted_blocks += blocks
