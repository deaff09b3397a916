"""Scheduling policies beyond FCFS, as subclasses of the simulator's `FCFSScheduler`.

    from functools import partial
    simulate(workload, replica, policy=partial(ShortestPrefillFirst, aging_tokens_per_s=2000))

A policy keeps FCFS's machinery (budget, KV blocks, preemption, decode aggregates) and changes
only who is admitted: it reorders (or holds back part of) `self.waiting` before FCFS admission
runs. Every running decode still gets its token every step.

    ShortestPrefillFirst  by prompt tokens left, with aging; pauses a long prefill for short ones (q50)
    PriorityScheduler     vLLM's priority order, with a KV cap per priority class (q10)
    FairScheduler         per-tenant weighted-token counters, VTC-style, with the counter lift (q11)

Each sets `fifo_admission = False`: it may admit a request behind a blocked queue head, so the
simulator must not run decode-only steps past an arrival while requests wait.
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np

from solutions.serving.step_scheduler import DECODE, PREFILL, FCFSScheduler


class ShortestPrefillFirst(FCFSScheduler):
    """Admit the waiting request with the fewest prompt tokens left to compute, minus an aging
    credit (`aging_tokens_per_s` x seconds waited) so that a long prompt is not starved. A long
    prompt already mid-prefill is paused for a step (it keeps its KV and progress) whenever shorter
    requests waiting can be prefilled whole in the budget; paused, it stays the newest running
    request, so FCFS's invariant (at most one prompt mid-prefill, the newest) holds.

    Seconds are the simulator's clock (`now`, set by `simulate`): a request's wait counts from the
    step at which it joined the waiting queue, its arrival or, if it landed mid-step, the end of
    that step (SGLang's `hrrn` also starts the wait at queue entry, counted in prefill tokens)."""

    fifo_admission = False  # may admit a request behind a blocked head: no decode-run shortcut

    def __init__(self, *args, aging_tokens_per_s: float = 0.0, **kwargs):
        super().__init__(*args, **kwargs)
        if self.config.long_prefill_token_threshold:
            raise ValueError("ShortestPrefillFirst pauses the one prompt mid-prefill; it does not model "
                             "long_prefill_token_threshold (several prompts mid-prefill): set it to 0")
        if not aging_tokens_per_s >= 0:
            raise ValueError(f"aging_tokens_per_s must be >= 0, got {aging_tokens_per_s!r}")
        self.aging_tokens_per_s = aging_tokens_per_s
        self.queued_s = {}  # rid -> clock when it first joined the waiting queue

    def add(self, rid: int) -> None:
        self.queued_s.setdefault(rid, self.now)
        super().add(rid)

    def key(self, rid: int) -> float:
        """Prompt tokens left to compute, less the aging credit for the seconds waited so far."""
        left = self.prompt[rid] + self.outputs[rid] - self.computed[rid]
        return left - self.aging_tokens_per_s * (self.now - self.queued_s[rid])

    def schedule(self, step: int):
        ranked = sorted(self.waiting, key=lambda r: (self.key(r), r))
        paused, held_back = self.partial, []
        if paused is not None and ranked and self.key(ranked[0]) < self.key(paused):
            # pause the long prefill for the short prompts that fit whole in this step's budget
            room = self.config.max_num_batched_tokens - self.n_decodes
            fits = []
            for rid in ranked:
                need = self.prompt[rid] + self.outputs[rid]
                if need > room or self.key(rid) >= self.key(paused):
                    break
                fits.append(rid)
                room -= need
            if fits:
                held_back = ranked[len(fits):]
                ranked = fits
                self.partial = None
            else:
                paused = None
        else:
            paused = None
        self.waiting.clear()
        self.waiting.extend(ranked)
        plan = super().schedule(step)
        self.waiting.extend(held_back)
        if paused is not None and paused in self.running and self.status[paused] == PREFILL:
            self.partial = paused
            del self.running[paused]  # keep it the newest running request
            self.running[paused] = None
        return plan


class PriorityScheduler(FCFSScheduler):
    """vLLM's priority policy for the waiting queue (lower `priority` value first, then arrival),
    with an optional cap on the KV blocks each priority class may reserve.

    A capped class reserves, at admission, the blocks of its whole prompt plus its `max_tokens`
    (the simulator's output length stands in for it: a client-set upper bound in a real engine),
    so the class never holds more than its cap; requests over the cap wait (vLLM has no such cap).

    `preemption` picks the victim when a running request's next blocks do not fit:
      "newest"          FCFS's (the most recently admitted running request), the default here;
      "lowest_priority" vLLM's priority policy: the running request with the largest
                        (priority, arrival time), even one already scheduled this step (its tokens go
                        back to the budget); a request that preempts itself lets the ones after it
                        still run. Waiting requests never preempt running ones, in either mode.
    `PriorityScheduler.vllm(priority=...)` is vLLM's `policy="priority"`: lowest-priority
    preemption and no cap."""

    fifo_admission = False  # a high-priority arrival may be admitted past a blocked head
    PREEMPTION = ("newest", "lowest_priority")

    def __init__(self, *args, priority, class_kv_blocks: dict | None = None, preemption: str = "newest", **kwargs):
        super().__init__(*args, **kwargs)
        self.priority = [int(p) for p in priority]
        if len(self.priority) != len(self.prompt):
            raise ValueError(f"priority has {len(self.priority)} entries for {len(self.prompt)} requests")
        if preemption not in self.PREEMPTION:
            raise ValueError(f"preemption must be one of {self.PREEMPTION}, got {preemption!r}")
        self.preemption = preemption
        self.cap = dict(class_kv_blocks or {})
        for c, blocks in self.cap.items():
            if not blocks >= 0:
                raise ValueError(f"class_kv_blocks[{c!r}] must be >= 0, got {blocks!r}")
        self.reserved = {c: 0 for c in self.cap}
        self.counted: set = set()

    @classmethod
    def vllm(cls, priority):
        """vLLM's `policy="priority"` as a `simulate(policy=...)` argument: the waiting queue by
        (priority, arrival), the lowest-priority running request preempted first, no class cap."""
        from functools import partial
        return partial(cls, priority=priority, preemption="lowest_priority")

    def _pop_victim(self) -> int:
        if self.preemption == "newest":
            return super()._pop_victim()
        rid = max(self.running, key=lambda r: (self.priority[r], r))  # requests are in arrival order
        del self.running[rid]
        return rid

    def reservation(self, rid: int) -> int:
        return self.pool.blocks_for(self.prompt[rid] + self.out_len[rid])

    def schedule(self, step: int):
        ranked = sorted(self.waiting, key=lambda r: (self.priority[r], r))
        room = {c: self.cap[c] - self.reserved[c] for c in self.cap}
        eligible, over = [], []
        for rid in ranked:
            c = self.priority[rid]
            if c in room and rid not in self.counted:
                need = self.reservation(rid)
                if need > room[c]:
                    over.append(rid)
                    continue
                room[c] -= need
            eligible.append(rid)
        self.waiting.clear()
        self.waiting.extend(eligible)
        plan = super().schedule(step)
        self.waiting.extend(over)
        for rid, _, _ in plan.chunks:
            c = self.priority[rid]
            if c in self.cap and rid not in self.counted:
                self.counted.add(rid)
                self.reserved[c] += self.reservation(rid)
        return plan

    def _unreserve(self, rid):
        if rid in self.counted:
            self.counted.discard(rid)
            self.reserved[self.priority[rid]] -= self.reservation(rid)

    def _finish(self, rid, step, finished):
        self._unreserve(rid)
        super()._finish(rid, step, finished)

    def _preempt(self, rid, step, plan):
        self._unreserve(rid)
        super()._preempt(rid, step, plan)


class FairScheduler(FCFSScheduler):
    """Per-tenant fair admission with a service counter, in the manner of the Virtual Token
    Counter (Sheng et al., OSDI'24): admit the head of the backlogged tenant whose counter is
    lowest; charge its counter at admission and again for every token its requests decode.

    Charges: `per_request` at admission plus `prefill_weight` per prompt token computed, and each
    step `decode_weight + context_weight x context` per running decode. Request-fair is
    `per_request=1` and zero weights; VTC's default is prefill 1, decode 2. A tenant whose queue was
    empty has its counter lifted, on arrival, to the lowest counter among backlogged tenants
    (`lift=True`), so it cannot bank credit while idle."""

    fifo_admission = False  # may admit another tenant's request past a blocked head

    def __init__(self, *args, tenant, per_request: float = 0.0, prefill_weight: float = 1.0,
                 decode_weight: float = 2.0, context_weight: float = 0.0, lift: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.tenant = [int(t) for t in tenant]
        if len(self.tenant) != len(self.prompt):
            raise ValueError(f"tenant has {len(self.tenant)} entries for {len(self.prompt)} requests")
        for name, w in (("per_request", per_request), ("prefill_weight", prefill_weight),
                        ("decode_weight", decode_weight), ("context_weight", context_weight)):
            if not w >= 0:
                raise ValueError(f"{name} must be >= 0, got {w!r}")
        self.per_request, self.w_prefill, self.w_decode, self.w_context = (
            per_request, prefill_weight, decode_weight, context_weight)
        self.lift = lift
        self.counter = {t: 0.0 for t in set(self.tenant)}
        self._tenant, self._prompt = np.array(self.tenant, dtype=np.int64), np.array(self.prompt, dtype=np.int64)

    def add(self, rid: int) -> None:
        t = self.tenant[rid]
        if self.lift and self.waiting:
            backlogged = set()
            for r in self.waiting:  # the backlogged tenants (stop once every tenant is found: a long queue is common)
                backlogged.add(self.tenant[r])
                if len(backlogged) == len(self.counter):
                    break
            if t not in backlogged:
                self.counter[t] = max(self.counter[t], min(self.counter[u] for u in backlogged))
        super().add(rid)

    def _decode_charge(self, step: int, steps: int = 1) -> None:
        for rid in self.running:
            if self.status[rid] == DECODE:
                ctx = step + self.offset[rid]
                self.counter[self.tenant[rid]] += steps * (self.w_decode + self.w_context * ctx)

    def schedule(self, step: int):
        # order the queue: repeatedly take the head of the tenant with the lowest projected counter (ties: the
        # lower tenant id). A tenant's projected counter only grows along its own FIFO queue, so that greedy merge is
        # a sort by (counter before the request, tenant, queue position), done here in numpy: a long queue is common
        if len(self.waiting) > 1:
            w = np.fromiter(self.waiting, dtype=np.int64, count=len(self.waiting))
            tenant = self._tenant[w]
            charge = self.per_request + self.w_prefill * (self._prompt[w] + np.asarray(itemgetter(*w.tolist())(self.outputs)))
            before = np.empty(w.size)
            for t in np.unique(tenant):
                mine = np.flatnonzero(tenant == t)
                # sequential sums from the counter, as repeated += would give (np.add.accumulate is sequential)
                before[mine] = np.add.accumulate(np.concatenate([[self.counter[int(t)]], charge[mine][:-1]]))
            ranked = w[np.lexsort((np.arange(w.size), tenant, before))].tolist()
            self.waiting.clear()
            self.waiting.extend(ranked)
        plan = super().schedule(step)
        for rid, c, _ in plan.chunks:
            t = self.tenant[rid]
            if self.admitted_step[rid] == step:  # its first admission (set once, never reset)
                self.counter[t] += self.per_request
            self.counter[t] += self.w_prefill * c
        self._decode_charge(step)
        return plan

    def run_decodes(self, step: int, k: int) -> list:
        if k > 1:
            # the k - 1 further steps of a decode run: charge each at its own context
            for rid in self.running:
                if self.status[rid] == DECODE:
                    ctx0 = step + 1 + self.offset[rid]
                    n = k - 1
                    self.counter[self.tenant[rid]] += n * self.w_decode + self.w_context * (n * ctx0 + n * (n - 1) / 2)
        return super().run_decodes(step, k)
