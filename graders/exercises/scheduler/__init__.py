"""q44 scheduler: three queues, a token budget, a sequence cap and a KV block pool.

The machine plays the engine. It adds requests over time, asks for each step's plan, runs it
(prefill chunks; one sampled token for every request whose tokens are all computed; a finish at
the token limit or at an end-of-sequence it drew when the request arrived) and checks every
step against its record of each request (`engine.Record`). Every request it sends fits the KV
pool on its own, so a correct scheduler can always make progress.
"""

from __future__ import annotations

import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from graders.exercise import Exercise, GradedMachine, Method, Property, Step
from graders.exercises.scheduler.engine import (
    FINISHED, PREEMPTED, QUEUE_OF, RUNNING, SWAPPED, WAITING, Record, blocks, parse_plan,
    parse_queues,
)

BUDGET = "budget"
KV = "kv-capacity"
ONE_QUEUE = "one-queue"
DECODES_FIRST = "decodes-first"
RESUME_FIRST = "resume-first"
FCFS = "fcfs"
VICTIM = "victim-newest"
NO_LOST_OUTPUT = "no-lost-output"
PROGRESS = "progress"
BOUNDED = "bounded-finish"

PLAN_SHAPE = "{'prefill': [[id, tokens], ...], 'decode': [id, ...], 'preempted': [id, ...]}"
QUEUES_SHAPE = "{'waiting': [id, ...], 'running': [id, ...], 'swapped': [id, ...]}"

SPEC = """\
A continuous-batching engine runs one forward pass per step. Before each step its scheduler
decides which requests run and how many tokens each computes; after the step it learns what
was sampled. Write that scheduler: one class, Scheduler, in about a hundred lines.

It keeps three queues (waiting, running, swapped), a token budget per step, a cap on running
requests, and a pool of num_blocks KV blocks of block_size tokens. A running request holds
ceil(computed tokens / block_size) blocks; a waiting or swapped one holds none (there is no
prefix cache). Request ids are ints given in arrival order. A request has prompt_len tokens and
may sample up to max_tokens. It samples one token in each step that computes the last of its
known tokens (prompt plus outputs so far): a prompt may take several steps in chunks, then the
request decodes one token per step. Every request fits the pool alone
(ceil((prompt_len + max_tokens - 1) / block_size) <= num_blocks), and token_budget >= max_seqs.

  __init__(token_budget, max_seqs, num_blocks, block_size, preemption)
        preemption is "recompute" (the victim's KV is dropped; it waits at the front of the
        waiting queue and later recomputes its prompt *and the outputs it already sampled*)
        or "swap" (its KV moves to host memory, unlimited; it waits in the swapped queue and
        resumes where it stopped, taking GPU blocks again for what it had computed).
  add_request(request_id, prompt_len, max_tokens)   a request arrives and joins waiting.
  schedule() -> {"prefill": [[id, tokens], ...], "decode": [id, ...], "preempted": [id, ...]}
        plan one step and reserve its KV. "decode": requests that have sampled at least one
        token and have every known token computed but the last sampled one (they compute
        exactly that one); "prefill": every other scheduled request and its chunk, including
        a fresh 1-token prompt and the re-prefill of a request preempted for recompute (until
        only its last sampled token is left); "preempted": the requests this step evicted.
        Nothing to do: empty lists.
  update(eos) -> [id, ...]   the step ran; `eos` lists the requests whose sampled token was
        end-of-sequence. Finish those and any that reached max_tokens (free their blocks; they
        leave every queue) and return the ids that finished, sorted (ascending).
  queues() -> {"waiting": [...], "running": [...], "swapped": [...]}   ids in queue order:
        running oldest admission first; in waiting, requests never admitted stand behind
        every request admitted before, in arrival order. A request whose prefill is under
        way (admitted, holding blocks, not yet sampled since) may be listed in running or,
        as nano-vllm keeps it, at the head of waiting; the grader counts its blocks either way.
        Swapped requests wait in arrival order, the order they resume in.

The order of the loops is the exercise. Serve running requests first, oldest first; a chunk
takes what the request needs, up to the budget left. When the pool cannot hold a request's
next tokens, preempt the most recently admitted running request (possibly itself) until it
fits. A step that preempted admits nobody. Otherwise resume swapped requests, then, only
when none is left swapped, admit waiting ones first come, first served: a head that does not
fit stops admission. Values cross to the grader as plain data (ints, lists, dicts with str
keys) and are compared by type and value.

Real engines (an adapter maps add_request / schedule / update onto theirs):
  vLLM v1 (vllm/v1/core/sched/scheduler.py) keeps this loop order but has no swapped queue
  and recomputes only. Given preemption="swap", a recompute-only adapter fails one-queue (the
  victim sits in waiting, not swapped) and no-lost-output (it recomputes what a swap keeps);
  with prefix caching off, its policy is the one above in recompute mode.
  nano-vllm (nanovllm/engine/scheduler.py) has no swapped queue either, and by design also
  fails decodes-first (a step that admits anyone is prefill-only), budget (max_num_seqs caps
  one step's batch, not the running set) and, in recompute mode too, no-lost-output (its
  prefix cache keeps a victim's full blocks, so it resumes past token 0). vLLM v0's
  chunked-prefill scheduler (vllm/core/scheduler.py) keeps all three queues and fails
  resume-first: it admits new prompts while requests wait swapped (issue #5578).
"""

METHODS = (
    Method("__init__", ("token_budget", "max_seqs", "num_blocks", "block_size", "preemption"),
           "empty queues; preemption is 'recompute' or 'swap'"),
    Method("add_request", ("request_id", "prompt_len", "max_tokens"), "a new request joins waiting"),
    Method("schedule", (), "plan one step: prefill chunks, decodes, preempted; reserve its KV",
           "dict"),
    Method("update", ("eos",), "the step ran; finish EOS and max_tokens requests; return their "
           "ids, sorted", "list[int]"),
    Method("queues", (), "ids in waiting, running and swapped, in queue order", "dict"),
)

PROPERTIES = (
    Property(BUDGET, "a step schedules at most token_budget tokens; at most max_seqs requests run"),
    Property(KV, "the KV the running requests hold (ceil(computed / block_size) blocks each) "
             "fits in num_blocks after every step"),
    Property(ONE_QUEUE, "every unfinished request is in exactly one queue, the one its history "
             "says (mid-prefill: running or waiting), a finished one in none; running lists "
             "oldest admission first, never-admitted requests wait in arrival order behind the "
             "rest, swapped ones in arrival order; a plan names each unfinished request at most once and preempts only "
             "running ones"),
    Property(DECODES_FIRST, "a step that admits or resumes a request has scheduled every request "
             "that was already running"),
    Property(RESUME_FIRST, "a step that preempts admits nobody; no new request is admitted while "
             "a preempted one waits (in waiting or swapped)"),
    Property(FCFS, "new requests are admitted, and preempted ones resumed, in arrival order: "
             "nobody overtakes an earlier request"),
    Property(VICTIM, "preemption takes the most recently admitted running requests, and only "
             "when the pool cannot hold the next tokens"),
    Property(NO_LOST_OUTPUT, "chunks never exceed what a request still needs, decodes only for "
             "requests whose tokens are computed (recompute re-prefills prompt and outputs; swap "
             "resumes where it stopped); update() finishes exactly at EOS or max_tokens"),
    Property(PROGRESS, "a step with any unfinished request schedules at least one token"),
    Property(BOUNDED, "a request finishes within the steps it and the requests unfinished when it "
             "arrived need as the oldest: the sum of ceil(prompt_len / token_budget) + max_tokens - 1"),
)


MAX_OUTPUTS = 8  # a generated request's max_tokens, at most


@lru_cache(maxsize=None)
def requests(room: int) -> st.SearchStrategy:
    """(prompt_len, max_tokens, eos_at) of a request whose KV fits `room` tokens alone. Its peak
    (prompt_len + max_tokens - 1) is often over half the pool, so two requests contend for it;
    eos_at is the output count whose token is end-of-sequence, 0 for none. Every strategy is
    built once (hypothesis validates a new strategy object at its first draw, which was most
    of a draw's cost)."""
    # over half the pool (two contend), a quarter (many fit), a third to a half (three fit as
    # prompts but not at their peaks: decode-heavy ones are preempted one after another, so
    # swap-mode runs hold two victims at once), or anything
    third = room // 3 + 1
    peaks = st.one_of(st.integers(room // 2 + 1, room), st.integers(1, max(1, room // 4)),
                      st.integers(third, max(third, room // 2)), st.integers(1, room))

    @st.composite
    def request(draw):
        peak = draw(peaks)
        # half decode-heavy (a short prompt, all the rest output): such requests grow together,
        # so swap-mode runs reach two victims at once and resumes while others still run
        max_tokens = draw(_outputs(min(MAX_OUTPUTS, peak)))
        eos_at = draw(_eos(max_tokens))
        return peak - max_tokens + 1, max_tokens, eos_at
    return request()


@lru_cache(maxsize=None)
def _outputs(most: int) -> st.SearchStrategy:
    return st.one_of(st.integers(1, most), st.just(most))


@lru_cache(maxsize=None)
def _eos(max_tokens: int) -> st.SearchStrategy:
    return st.one_of(st.just(0), st.integers(0, max_tokens - 1))


@lru_cache(maxsize=None)
def arrivals(room: int, min_size: int, max_size: int) -> st.SearchStrategy:
    return st.lists(requests(room), min_size=min_size, max_size=max_size)


@lru_cache(maxsize=None)
def opening(room: int) -> st.SearchStrategy:
    """The first arrivals: two to four of any kind, or a swarm of three or four decode-heavy
    requests that fit the pool as prompts but not at their peaks. Those are preempted one
    after another, so a swap-mode run holds two victims at once and the swapped queue's order
    is tested (without the swarm, one swap-mode example in a hundred got there)."""
    low = room // 3 + 1
    swarmer = st.integers(low, max(low, room // 2 + 2)).map(
        lambda peak: (peak - min(MAX_OUTPUTS, peak) + 1, min(MAX_OUTPUTS, peak), 0))
    return st.one_of(arrivals(room, 2, 4), st.lists(swarmer, min_size=3, max_size=4))


class EngineMachine(GradedMachine):
    """Drives a candidate Scheduler as the engine would; `reqs` is the engine's record."""

    def __init__(self):
        super().__init__()
        self.reqs: dict[int, Record] = {}
        self.steps = 0  # engine steps run so far
        self.admissions = 0
        self.pending = None  # the last step's update(), sent in the next round trip
        self.clean = False  # the last rule ran to its end (teardown drains only a clean run)

    # ---- set-up and arrivals -------------------------------------------------------------
    @initialize(data=st.data())
    def create(self, data):
        self.block_size = data.draw(st.sampled_from((2, 4)), label="block_size")
        self.num_blocks = data.draw(st.integers(2, 5), label="num_blocks")
        self.max_seqs = data.draw(st.integers(2, 4), label="max_seqs")
        self.budget = data.draw(st.integers(self.max_seqs, 8), label="token_budget")
        self.mode = data.draw(st.sampled_from(("recompute", "swap")), label="preemption")
        self.construct(self.budget, self.max_seqs, self.num_blocks, self.block_size, self.mode)
        self.run_step(data.draw(opening(self.num_blocks * self.block_size), label="arrivals"))
        self.clean = True

    @property
    def live(self) -> list[Record]:
        return [r for r in self.reqs.values() if r.status != FINISHED]

    @rule(data=st.data())
    def tick(self, data):
        """Up to three arrivals (while fewer than five requests are unfinished), then a step."""
        room = self.num_blocks * self.block_size
        self.clean = False
        new = data.draw(arrivals(room, 0, 3 if len(self.live) < 5 else 0), label="arrivals")
        if new or self.live:  # an idle engine does not step
            self.run_step(new)
        self.clean = True

    @precondition(lambda self: any(r.status != FINISHED for r in self.reqs.values()))
    @rule()
    def drain(self):
        """No more arrivals: run steps until every request finished (or one overstays)."""
        self.clean = False
        self.finish_all()
        self.clean = True

    def teardown(self):
        """Every run ends with a drain, so a request held back near the end is still seen
        overstaying. Skipped when the run is ending on an exception (a failed check, or
        hypothesis stopping it): the drain must not replace that exception with its own."""
        if self.clean and sys.exc_info()[0] is None:
            self.finish_all()

    def finish_all(self):
        deadline = max((r.arrived + r.bound for r in self.live), default=self.steps)
        while self.live and self.steps <= deadline:
            self.run_step([])
        if self.pending:
            self.check_update(*self.batch([("update", (self.pending[0],), False),
                                           ("queues", (), True)]))

    # ---- one engine step: one round trip -------------------------------------------------
    def run_step(self, arrivals):
        """[update(last step's EOS), queues()], add_request per arrival, schedule(): one
        round trip. Each reply is checked in that order."""
        calls = [("update", (self.pending[0],), False), ("queues", (), True)] if self.pending else []
        first = len(self.reqs)
        calls += [("add_request", (first + k, p, m), False) for k, (p, m, _) in enumerate(arrivals)]
        calls.append(("schedule", (), False))
        mark = len(self.transcript.steps)
        replies = self.batch(calls)
        if self.pending:
            later = self.transcript.steps[mark + 2:]  # a failure here ends the repro at update()
            del self.transcript.steps[mark + 2:]
            self.check_update(replies[0], replies[1])
            self.transcript.steps.extend(later)
            replies = replies[2:]
        for k, ((prompt, max_tokens, eos_at), reply) in enumerate(zip(arrivals, replies)):
            self.expect_none(self.focus, reply, f"add_request({first + k}, {prompt}, {max_tokens})")
            record = Record(first + k, prompt, max_tokens, eos_at, self.steps, 0)
            record.bound = sum(r.alone_steps(self.budget) for r in self.live + [record])
            self.reqs[record.id] = record
        self.check_plan(replies[-1])

    def check_plan(self, reply):
        live = {r.id: r for r in self.live}
        before = {i: (r.status, r.computed, r.need, r.decoding, r.admitted) for i, r in live.items()}
        plan = parse_plan(reply.value) if reply.raised is None else None
        self.check(self.focus, plan is not None,
                   f"schedule() {reply.show() if reply.raised else 'returned ' + reply.show()}, "
                   f"expected {PLAN_SHAPE}")
        self.check_names(plan, before)
        self.check(PROGRESS, plan.tokens > 0 or not live,
                   f"schedule() scheduled nothing while request(s) {sorted(live)} are unfinished "
                   f"({self.where(live)}); each fits the pool alone, so one of them can run")
        scheduled = plan.scheduled
        admitted = [i for i in scheduled if before[i][0] != RUNNING or i in plan.preempted]
        self.check(RESUME_FIRST, not (plan.preempted and admitted),
                   f"schedule() preempted {plan.preempted} and admitted {sorted(admitted)} in the "
                   "same step: a step that had to preempt has no room for anyone, the victim included")
        self.check(BUDGET, plan.tokens <= self.budget,
                   f"schedule() planned {plan.tokens} tokens ({len(plan.decode)} decode(s) + "
                   f"prefill chunks {plan.prefill}) but token_budget is {self.budget}")
        running = sorted({i for i, b in before.items() if b[0] == RUNNING} - set(plan.preempted)
                         | set(scheduled))
        self.check(BUDGET, len(running) <= self.max_seqs,
                   f"after this step {len(running)} requests are running ({running}) but "
                   f"max_seqs is {self.max_seqs}: the cap is on the running set, not on one "
                   "step's admissions")
        self.check_chunks(plan, before)
        self.check_order(plan, before)
        self.execute(plan)
        self.check_pool(plan, before)
        self.sample(scheduled)
        self.steps += 1
        for r in self.live:
            self.check(BOUNDED, self.steps - r.arrived < r.bound,
                       f"{r.describe()} arrived {self.steps - r.arrived} steps ago and is still "
                       f"{QUEUE_OF[r.status]}; it should have finished within {r.bound} steps: its "
                       f"own {r.alone_steps(self.budget)} (ceil(prompt / budget) + max_tokens - 1) "
                       "plus those of the earlier requests still unfinished when it arrived. Later "
                       "requests are holding it back")

    def where(self, live: dict) -> str:
        by_queue = {}
        for i, r in live.items():
            by_queue.setdefault(QUEUE_OF[r.status], []).append(i)
        return ", ".join(f"{q}: {ids}" for q, ids in by_queue.items())

    def check_names(self, plan, before):
        for i in plan.names:
            r = self.reqs.get(i)
            self.check(ONE_QUEUE, r is not None and r.status != FINISHED,
                       f"schedule() names request {i}, which "
                       f"{'finished earlier' if r is not None else 'was never added'}")
        named = [i for i, _ in plan.prefill] + plan.decode
        twice = [i for ids in (named, plan.preempted) for i, k in Counter(ids).items() if k > 1]
        self.check(ONE_QUEUE, not twice, f"schedule() names request {twice[0] if twice else ''} "
                   f"twice in {plan}")
        for i in plan.preempted:
            self.check(ONE_QUEUE, before[i][0] == RUNNING,
                       f"schedule() preempted request {i}, which was {QUEUE_OF[before[i][0]]}, "
                       "not running")

    def check_chunks(self, plan, before):
        for i, n in plan.prefill:
            status, computed, need, decoding, _ = before[i]
            r = self.reqs[i]
            resumed_from_zero = status == SWAPPED and n == r.prompt_len + r.outputs
            self.check(NO_LOST_OUTPUT, 1 <= n <= need,
                       f"schedule() gives request {i} a chunk of {n} token(s) but it has {need} "
                       f"left to compute ({r.prompt_len} prompt + {r.outputs} sampled - {computed} "
                       "computed)" + (": a swapped request keeps its KV and resumes where it "
                                      "stopped" if resumed_from_zero else ""))
            self.check(NO_LOST_OUTPUT, not decoding,
                       f"schedule() lists request {i} as a prefill chunk of {n}, but all its tokens "
                       "but one are computed: it decodes (list it under 'decode')")
        for i in plan.decode:
            status, computed, need, decoding, _ = before[i]
            r = self.reqs[i]
            self.check(NO_LOST_OUTPUT, decoding,
                       f"schedule() decodes request {i}, but it still has {need} tokens to compute "
                       f"({r.prompt_len} prompt + {r.outputs} sampled - {computed} computed)"
                       + (": after a recompute preemption the prefill must cover the outputs "
                          "sampled before it too" if r.outputs and need > 1 else ""))

    def check_order(self, plan, before):
        scheduled = plan.scheduled
        running = sorted((i for i, b in before.items() if b[0] == RUNNING), key=lambda i: before[i][4])
        new = sorted(i for i in scheduled if before[i][0] == WAITING)
        resumed = sorted(i for i in scheduled if before[i][0] in (PREEMPTED, SWAPPED))
        held = sorted(i for i, b in before.items() if b[0] in (PREEMPTED, SWAPPED))
        if new or resumed:
            missed = [i for i in running if i not in scheduled and i not in plan.preempted]
            self.check(DECODES_FIRST, not missed,
                       f"schedule() admitted {new + resumed} while running request(s) {missed} got "
                       "no token: running requests are served before anyone is admitted")
        if new:
            left = [i for i in held if i not in scheduled]
            self.check(RESUME_FIRST, not left,
                       f"schedule() admitted new request(s) {new} while preempted request(s) {left} "
                       f"still wait in {'swapped' if self.mode == 'swap' else 'waiting'}: "
                       "preempted requests resume first")
            skipped = [i for i, b in before.items() if b[0] == WAITING and i < new[-1]
                       and i not in scheduled]
            self.check(FCFS, not skipped,
                       f"schedule() admitted request {new[-1]} while request(s) {skipped}, which "
                       "arrived earlier, still wait: first come, first served")
        if resumed:
            skipped = [i for i in held if i < resumed[-1] and i not in scheduled]
            self.check(FCFS, not skipped,
                       f"schedule() resumed request {resumed[-1]} while preempted request(s) "
                       f"{skipped}, which arrived earlier, still wait: resume in arrival order")
        if plan.preempted:
            newest = running[len(running) - len(plan.preempted):]
            self.check(VICTIM, sorted(plan.preempted) == sorted(newest),
                       f"schedule() preempted {plan.preempted}, but the most recently admitted "
                       f"running request(s) are {newest[::-1]} (newest first; running in admission "
                       f"order: {running}): the newest admission pays")

    def execute(self, plan):
        for i in plan.preempted:
            r = self.reqs[i]
            r.status = SWAPPED if self.mode == "swap" else PREEMPTED
            if self.mode == "recompute":
                r.computed = 0
        for i, n in sorted(plan.scheduled.items()):  # same-step admissions: oldest first
            r = self.reqs[i]
            r.computed += n
            if r.status != RUNNING:
                self.admissions += 1
                r.status, r.admitted = RUNNING, self.admissions

    def check_pool(self, plan, before):
        """After the plan ran: the KV the running requests hold, and whether a preemption was needed."""
        running = [r for r in self.live if r.status == RUNNING]
        used = sum(blocks(r.computed, self.block_size) for r in running)
        self.check(KV, used <= self.num_blocks,
                   f"after this step the running requests hold {used} KV blocks "
                   f"({', '.join(f'{r.id}: {r.computed} tokens' for r in running)}; block_size "
                   f"{self.block_size}) but the pool has {self.num_blocks}")
        if plan.preempted:
            # the last victim taken (the oldest) must have been needed: even counting only what
            # the step kept, the pool could not also hold that victim's next tokens
            oldest = min(plan.preempted, key=lambda i: before[i][4])
            _, computed, need, _, _ = before[oldest]
            wanted = blocks(computed + need, self.block_size)
            self.check(VICTIM, used + wanted > self.num_blocks,
                       f"schedule() preempted request {oldest} although the pool had room: the step "
                       f"leaves {used} of {self.num_blocks} blocks in use, and request {oldest} "
                       f"needed {wanted} for all its next tokens")

    def sample(self, scheduled: dict):
        """Every scheduled request whose known tokens are now all computed samples one token;
        it finishes at max_tokens or at the end-of-sequence drawn for it."""
        sampled = [self.reqs[i] for i in scheduled
                   if self.reqs[i].computed == self.reqs[i].prompt_len + self.reqs[i].outputs]
        for r in sampled:
            r.outputs += 1
        eos = sorted(r.id for r in sampled if r.outputs == r.eos_at)
        finished = sorted(r.id for r in sampled if r.outputs in (r.max_tokens, r.eos_at))
        for i in finished:
            self.reqs[i].status = FINISHED
        self.pending = (eos, finished, sampled, set(scheduled))

    def check_update(self, update, queues):
        eos, finished, sampled, scheduled = self.pending
        self.pending = None
        got = update.value if update.raised is None else None
        self.check(self.focus, type(got) is list and all(type(i) is int for i in got),
                   f"update({eos}) {update.show() if update.raised else 'returned ' + update.show()}"
                   ", expected a list of request ids")
        self.check(NO_LOST_OUTPUT, got == finished,
                   f"update({eos}) returned {got}, but {finished or 'none'} finished "
                   f"({self.why_finished(sampled)}; ids sorted ascending)")
        self.check_queues(queues, scheduled)

    def why_finished(self, sampled) -> str:
        parts = [f"{r.id}: {r.outputs}/{r.max_tokens} sampled"
                 + (", EOS" if r.outputs == r.eos_at else "") for r in sampled]
        return "; ".join(parts) if parts else "nothing sampled this step"

    def check_queues(self, reply, scheduled: set):
        """After update(): each unfinished request in the one queue its history puts it in."""
        queues = parse_queues(reply.value) if reply.raised is None else None
        self.check(self.focus, queues is not None,
                   f"queues() {reply.show() if reply.raised else 'returned ' + reply.show()}, "
                   f"expected {QUEUES_SHAPE}")
        seen = Counter(i for q in queues.values() for i in q)
        for i, k in seen.items():
            r = self.reqs.get(i)
            self.check(ONE_QUEUE, r is not None, f"queues() lists request {i}, which was never added")
            self.check(ONE_QUEUE, k == 1, f"request {i} appears {k} times in queues(): {queues}")
            self.check(ONE_QUEUE, r.status != FINISHED,
                       f"request {i} finished ({r.outputs}/{r.max_tokens} sampled"
                       f"{', EOS' if r.outputs == r.eos_at else ''}) but queues() still has it: {queues}")
        for r in self.live:
            want = QUEUE_OF[r.status]
            found = next((q for q, ids in queues.items() if r.id in ids), None)
            why = {WAITING: "it was never admitted", PREEMPTED: "it was preempted for recompute",
                   SWAPPED: "it was swapped out", RUNNING: "it was admitted and not preempted"}
            prefilling = r.status == RUNNING and not r.decoding  # nano-vllm keeps it waiting
            self.check(ONE_QUEUE, found == want or (prefilling and found == "waiting"),
                       f"request {r.id} should be in {want} ({why[r.status]}"
                       f"{', scheduled this step' if r.id in scheduled else ''}) but queues() has it "
                       f"in {found or 'no queue'}: {queues}")
        running = [i for i in queues["running"] if i in self.reqs]
        by_admission = sorted(running, key=lambda i: self.reqs[i].admitted)
        self.check(ONE_QUEUE, running == by_admission,
                   f"queues() lists running as {queues['running']}, but in admission order "
                   f"(oldest first, the newest is the next victim) it is {by_admission}")
        waiting = [i for i in queues["waiting"] if i in self.reqs]
        fresh = [i for i in waiting if self.reqs[i].status == WAITING]
        order = [i for i in waiting if self.reqs[i].status != WAITING] + sorted(fresh)
        self.check(ONE_QUEUE, waiting == order,
                   f"queues() lists waiting as {queues['waiting']}: requests never admitted "
                   f"wait in arrival order behind every request admitted before ({order})")
        swapped = [i for i in queues["swapped"] if i in self.reqs]
        self.check(ONE_QUEUE, swapped == sorted(swapped),
                   f"queues() lists swapped as {queues['swapped']}: swapped requests wait in "
                   f"arrival order, the order they resume in ({sorted(swapped)})")

    def batch(self, calls):
        """Calls in one round trip; actions stay in the repro, read-only ones are queries."""
        steps = [Step(m, tuple(a), query=q) for m, a, q in calls]
        self.transcript.steps.extend(steps)
        replies = self.sandbox.call_many([(m, list(a)) for m, a, _ in calls])
        for s, reply in zip(steps, replies):
            s.reply = reply
        return replies


EXERCISE = Exercise(
    name="scheduler",
    question="q44",
    title="A continuous-batching scheduler: three queues, a token budget, a KV pool",
    spec=SPEC,
    class_name="Scheduler",
    methods=METHODS,
    properties=PROPERTIES,
    machine=EngineMachine,
    home=Path(__file__).parent,
    reference=Path(__file__).resolve().parents[3] / "solutions" / "exercises" / "scheduler.py",
    default_examples=60,
    steps=20,
)
