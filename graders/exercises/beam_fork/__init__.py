"""q46 beam-search fork: block tables over a reference-counted pool, graded by beam searches.

The machine plays the engine. Each rule is one beam step, run in the order an engine runs it
(free the hypotheses nobody extended, fork the extra survivors, free parents whose own
continuation lost, then append to every survivor), batched into one round trip. It applies
the copies the candidate returns, writes each token through the candidate's tables into its
own model of the KV cache, and compares what every live hypothesis reads with `BeamModel`,
a beam search that keeps full copies (model.py).
"""

from __future__ import annotations

from collections import Counter
from itertools import count
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from graders.exercise import Exercise, GradedMachine, Method, Property
from graders.exercises.beam_fork.model import (COPY, FULL, FULL_OPEN, IN_PLACE, BeamModel,
                                               blocks_for, slot_of)

CONTENT = "content-equal"
NO_LEAK = "no-leak"
NO_EARLY_FREE = "no-free-while-referenced"
MIN_COPIES = "copies-minimal"
OUT_OF_BLOCKS = "out-of-blocks"
WINDOW = "window-ring"

MAX_WIDTH, MAX_PROMPT, MAX_BLOCK_SIZE, MAX_WINDOW = 4, 6, 4, 3
STEPS = 10   # hypothesis steps per run: the start, then up to 9 beam steps

SPEC = """\
Beam search keeps up to `width` hypotheses. Every step each survivor extends one current
hypothesis by one token; a hypothesis nobody extends dies, and one extended twice forks.
A cache that copies each survivor's KV history on every fork spends its bandwidth on
copies. Fork block tables instead: a child shares its parent's blocks, and a block is
copied only when a sequence writes into a block that another sequence still reads. Write
the bookkeeping: one class, BlockTables, about sixty lines of plain Python, over a pool
of `num_blocks` physical blocks of `block_size` tokens each.

  __init__(num_blocks, block_size, window_blocks)
        window_blocks is None (full attention) or W >= 1: a sliding window of W blocks.
        A sequence then keeps only its last W blocks: a token that opens logical block
        n >= W goes into the block of logical block n - W (a ring), over tokens that have
        just left the window; the other slots of that block are still in the window.
  start(seq_id, num_tokens)
        a new sequence holding a prompt of num_tokens >= 1 tokens: give it the blocks its
        prompt fills. MemoryError if the pool is short, and then nothing changes.
  fork(parent_id, child_id)
        child_id becomes a new sequence that reads exactly what the parent reads: it
        shares the parent's blocks, each gaining one reference.
  append(seq_id)
        make room for the sequence's next token. Return None if the token can be written
        where it goes: a block only this sequence holds, or a fresh block it opens.
        Return (source, destination) if the block it would write into is shared: the
        sequence moves to the fresh block `destination`, which the engine fills from
        `source` before the token is written. MemoryError if it needs a block (a fresh
        one, or the copy's destination) and none is free; then nothing changes: its table,
        every reference and free_count() stay as they were.
  free(seq_id)
        the sequence is gone: drop its references.
  block_table(seq_id) -> list[int]
        the blocks the sequence reads, oldest first: one per logical block
        (ceil(length / block_size)), or with a window the last min(that, W), in order.
  free_count() -> int
        blocks no sequence holds.

The grader plays the engine and runs random beam searches: width 1-4, a prompt of 1-6
tokens, blocks of 1-4 tokens, survivors drawn at random, and in one search in four a window
of 1-3 blocks (the others use full attention). Half the pools are roomy (a solution that
never leaks never runs out), the others tight: exactly the prompt's blocks and up to `width`
more, or one block short of the prompt. Each step it calls, in this order: free() for the
hypotheses nobody extended (and for any whose append last step raised MemoryError: the
engine gives up on them, as a preemption would), fork() for the extra survivors, free() for
a parent whose own continuation lost (after its children are forked), then append() for
every survivor in creation order. It applies every copy you return before it writes any token (as
the GPU does: the copies run before the step's forward pass), writes each token through
your tables into its own model of the KV cache, and reads every live hypothesis back
through block_table(). Sequence ids are the grader's ints; it calls fork, append, free and
block_table only on live sequences. It knows exactly when an append must raise: when the
cheapest layout (the copy bound below) holds every block and the append needs one. Return
plain ints, None, and lists or tuples; they are compared by type and value.

The copy bound: all frees of a step land before its first append. Then a block that k live
hypotheses write into this step costs k - 1 copies and no more: each writer that finds the
block still shared moves to a fresh copy, and the last one finds itself the sole owner and
writes in place. That includes a survivor whose parent died this step: once the parent's
references are gone, the survivor is the last sharer. More copies than the bound fails
copies-minimal; fewer is only possible by writing into a block another hypothesis reads,
which fails content-equal.

Which window design is graded, and why. The window tests the ring above: W blocks per
sequence, the smallest footprint, and the design the copy bound is stated for (opening a
block in a full window writes into a block a sibling may share). It is not the only correct
design: vLLM v0's later block manager keeps one table entry per logical block, replaces the
blocks that fell out of the window by a shared null block and frees them, and opens a fresh
block for every new logical block, holding a few blocks more than W (history: BlockTable in
`vllm==0.6.3:vllm/core/block/block_table.py` `null_block`). That design reads the same tokens but
fails the ring's table checks. So every check made in a windowed search belongs to one
property, window-ring, and once it has failed the other properties are graded on
full-attention searches alone: a design with another window layout, or none, fails
window-ring and nothing else.

Real engines. vLLM v0's first block manager (history:
`vllm==0.6.3:vllm/core/block_manager_v1.py` `class BlockSpaceManagerV1`) is this interface:
start = allocate(seq_group), fork = fork(parent_seq, child_seq), append =
seq.append_token_id(...) then append_slots(seq), whose list holds at most one
(source, destination) pair, free = free(seq), block_table = get_block_table(seq) (its last
W entries under a window), free_count = get_num_free_gpu_blocks(). Its output processor
frees dead hypotheses and forks survivors before the next step's append_slots, and
append_slots copies only a block whose ref_count is above 1, so without a sliding window it
meets every full-attention property. With a sliding window it does not: it wraps onto
block_table[len(block_table) % W] (the mutant wrap_index_modulo_table) and forks every
block the whole table lists; once a wrapped block has been copied, the early entries of
the table are stale, and the grader finds a write into a block the sequence gave up and a
leak (both window-ring). vLLM v1 and nano-vllm skip the exercise: neither
forks a block table or copies a block. vLLM v1's LLM.beam_search resubmits each beam's
token list as a new prompt and shares only full blocks, through the prefix cache (a
partial last block is recomputed, not copied); nano-vllm has no beam search.
"""

METHODS = (
    Method("__init__", ("num_blocks", "block_size", "window_blocks"),
           "a pool of num_blocks blocks of block_size tokens; window_blocks None or W >= 1"),
    Method("start", ("seq_id", "num_tokens"), "a new sequence with a prompt of num_tokens "
           "tokens, in the blocks it fills; MemoryError if the pool is short"),
    Method("fork", ("parent_id", "child_id"), "child shares every block the parent reads "
           "(one more reference each)"),
    Method("append", ("seq_id",), "room for one more token: None, or (source, destination) "
           "when the block it writes into is shared (copy on write)",
           "tuple[int, int] | None"),
    Method("free", ("seq_id",), "drop the sequence's references"),
    Method("block_table", ("seq_id",), "blocks the sequence reads, oldest first (the last W "
           "under a window)", "list[int]"),
    Method("free_count", (), "blocks no sequence holds", "int"),
)

PROPERTIES = (
    Property(CONTENT, "after every step, every live hypothesis reads through its block table "
             "exactly the tokens a beam search that keeps full copies holds"),
    Property(NO_LEAK, "after every step, free_count() counts every block no live hypothesis "
             "reads; when the search ends and every hypothesis is freed, all blocks are free"),
    Property(NO_EARLY_FREE, "a block a live hypothesis reads is never counted free, never "
             "handed to another sequence, and freeing a live sequence succeeds"),
    Property(MIN_COPIES, "each step makes no more copies than the bound: a block k live "
             "hypotheses write into costs k - 1 (the last sharer writes in place)"),
    Property(OUT_OF_BLOCKS, "start and append raise MemoryError exactly when they need a block "
             "(the prompt's, a fresh one, a copy's destination) and none is free, and then "
             "change nothing"),
    Property(WINDOW, "with a sliding window of W blocks, all of the above hold for the ring "
             "layout (every check of a windowed search is this property's)"),
)


class BeamMachine(GradedMachine):
    """Drives a candidate BlockTables through beam searches; `model` is the oracle."""

    window_odds = 4   # one search in four draws a window; a subclass may set 1 (always)

    def __init__(self):
        super().__init__()
        self.model: BeamModel | None = None
        self.window = None
        self.tables: dict[int, list[int]] = {}  # hypothesis -> candidate's table, last read
        self.memory: dict[int, list] = {}       # block -> slots: the grader's KV cache
        self.stalled: list[int] = []            # found no block last step: freed next step
        self.seq_ids = count()
        self.token_ids = count(100)             # every token unique: a misread cannot hide
        self.step = self.length = 0

    def check(self, prop: str, ok: bool, reason: str) -> None:
        """In a search with a sliding window every check belongs to `window-ring`: a design
        that keeps another window layout (or none) fails that property alone."""
        if not ok and self.window is not None:
            prop, reason = WINDOW, f"window of {self.window}: {reason}"
        super().check(prop, ok, reason)

    def act(self, calls: list[tuple[str, tuple, bool]]):
        """One round trip: (method, args, read-only?) in order; all run, even after a raise."""
        return self.send(calls)

    # -- the beam search -------------------------------------------------------------
    @initialize(width=st.integers(1, MAX_WIDTH), block_size=st.integers(1, MAX_BLOCK_SIZE),
                prompt=st.integers(1, MAX_PROMPT),
                window=st.integers(1, MAX_WINDOW), length=st.integers(1, STEPS - 1),
                pool=st.integers(0, 7), spare=st.integers(0, MAX_WIDTH), data=st.data())
    def begin(self, width, block_size, prompt, window, length, pool, spare, data):
        """One search in `window_odds` uses a sliding window (none once `window-ring` has
        failed: the other properties are then graded on full attention alone). Half the
        pools are roomy (a solution that never leaks never runs out), three in eight are
        tight (the prompt's blocks and up to `width` more: appends and copies find the pool
        empty), one in eight is a block short of the prompt."""
        odds = self.window_odds
        if (WINDOW in self.failed or WINDOW in self.excused
                or data.draw(st.integers(0, odds - 1), label="windowed?") != odds - 1):
            window = None
        self.width, self.block_size, self.window = width, block_size, window
        self.length = length                    # beam steps before the search ends
        need = blocks_for(prompt, block_size, window)
        self.num_blocks = (width * blocks_for(prompt + STEPS, block_size, window) + 1
                           if pool < 4 else need + min(spare, width) if pool < 7
                           else max(1, need - 1))
        self.reach("search: " + ("windowed" if window else "full attention"),
                   "pool: " + ("roomy" if pool < 4 else "tight" if pool < 7 else "short"))
        self.construct(self.num_blocks, block_size, window)
        self.model = BeamModel(block_size, window)
        seq = next(self.seq_ids)
        tokens = [next(self.token_ids) for _ in range(prompt)]
        if need > self.num_blocks:
            self.reach("start: pool short")
            start, free = self.act([("start", (seq, prompt), False), ("free_count", (), True)])
            self.check(OUT_OF_BLOCKS, start.raised_builtin("MemoryError"),
                       f"start({seq}, {prompt}) {start.show() if start.raised else 'returned ' + start.show()}"
                       f", but the prompt needs {need} block(s) and the pool has "
                       f"{self.num_blocks}: expected MemoryError")
            self.check(OUT_OF_BLOCKS, free.raised is None and free.value == self.num_blocks,
                       f"after the refused start({seq}, {prompt}), free_count() is "
                       f"{free.show()}: a refused start changes nothing ({self.num_blocks} free)")
            self.length = 0                     # nothing to search
            return
        self.reach("start: exact fit" if need == self.num_blocks else "start: fits")
        self.model.start(seq, tokens)
        replies = self.act([("start", (seq, prompt), False), ("block_table", (seq,), True),
                            ("free_count", (), True)])
        start = replies[0]
        self.check(OUT_OF_BLOCKS, not start.raised_builtin("MemoryError"),
                   f"start({seq}, {prompt}) {start.show()}, but the prompt needs {need} "
                   f"block(s) and all {self.num_blocks} are free")
        self.succeeded(CONTENT, start, f"start({seq}, {prompt})")
        tables = self.read_tables([seq], replies[1:-1])
        self.check_pool({seq: []}, tables, replies[-1])
        for p, token in self.model.expected(seq).items():
            self.write(seq, p, token)
        self.reads_back([seq])

    @precondition(lambda self: self.step < self.length)
    @rule(data=st.data())
    def beam_step(self, data):
        self.step += 1
        live = [h for h in self.model.tokens if h not in self.stalled]
        if not live:                            # every survivor found the pool empty
            self.end_search()
            self.step = self.length
            return
        survivors = data.draw(st.integers(1, self.width), label="survivors")
        children = Counter(data.draw(st.sampled_from(live), label="parent")
                           for _ in range(survivors))
        continues = {p: data.draw(st.booleans(), label=f"{p} continues") for p in children}
        dead = self.stalled + [h for h in live if h not in children]
        replaced = [p for p in children if not continues[p]]
        forks = [(p, next(self.seq_ids)) for p in children
                 for _ in range(children[p] - continues[p])]
        if replaced and forks:
            self.reach("step: a parent freed after its children forked")
        before = {c: self.tables[p] for p, c in forks}
        before.update((p, self.tables[p]) for p in children if continues[p])
        before = dict(sorted(before.items()))   # creation order, like v0's running seqs
        writers = list(before)
        calls = ([("free", (h,), False) for h in dead]
                 + [("fork", (p, c), False) for p, c in forks]
                 + [("free", (p,), False) for p in replaced]
                 + [("append", (h,), False) for h in writers]
                 + [("block_table", (h,), True) for h in writers] + [("free_count", (), True)])
        replies = self.act(calls)
        actions, reads = replies[:-len(writers) - 1], replies[-len(writers) - 1:]
        frees_and_forks = len(actions) - len(writers)
        for (method, args, _), reply in zip(calls, actions[:frees_and_forks]):
            self.judge_action(method, args, reply)

        for p, c in forks:
            self.model.fork(p, c)
        for h in dead + replaced:
            self.model.free(h)
            del self.tables[h]
        lengths = {h: len(self.model.tokens[h]) for h in writers}
        tokens = {h: next(self.token_ids) for h in writers}
        ring = {h: self.window is not None and lengths[h] % self.block_size == 0
                and len(before[h]) == self.window for h in writers}
        outcomes = self.model.append_each(tokens, self.num_blocks)
        for h, reply in zip(writers, actions[frees_and_forks:]):
            self.reach(f"append: {outcomes[h]}" + (" (ring)" if ring[h] else ""))
            self.judge_append(h, reply, outcomes[h])
        self.stalled = [h for h in writers if outcomes[h] in FULL]

        tables = self.read_tables(writers, reads[:-1])
        copies = []
        for h, reply in zip(writers, actions[frees_and_forks:]):
            if outcomes[h] in FULL:
                self.check(OUT_OF_BLOCKS, tables[h] == before[h],
                           f"append({h}) raised MemoryError but changed block_table({h}) from "
                           f"{before[h]} to {tables[h]}: a refused append changes nothing")
                continue
            self.check_append(h, before[h], tables[h], lengths[h], reply.value)
            copies += [tuple(reply.value)] if reply.value is not None else []
        self.check_pool(before, tables, reads[-1])
        for src, dst in copies:                 # every copy lands before any token
            self.memory[dst] = list(self.memory.get(src, [None] * self.block_size))
        for h in writers:
            if outcomes[h] not in FULL:
                self.write(h, lengths[h], tokens[h])
        self.reads_back(writers)
        bound = sum(o == COPY for o in outcomes.values())
        freed = dead + replaced
        made = f"{len(copies)} cop{'y' if len(copies) == 1 else 'ies'}"
        self.check(MIN_COPIES, len(copies) <= bound,
                   f"beam step {self.step} made {made}, {copies}, but {bound} "
                   f"suffice{'s' if bound == 1 else ''}: a block k live hypotheses write into "
                   "costs k - 1 copies, since the last of them is its sole owner"
                   + (f" (hypotheses {freed} were freed before the first append)" if freed
                      else ""))
        if self.step == self.length:
            self.end_search()

    @precondition(lambda self: self.step >= self.length)
    @rule()
    def search_over(self):
        """Nothing left to do: the runner may still ask for steps."""

    def end_search(self):
        """The search ends: every hypothesis is freed, and the whole pool must be free."""
        live = list(self.model.tokens)
        replies = self.act([("free", (h,), False) for h in live] + [("free_count", (), True)])
        for h, reply in zip(live, replies):
            self.judge_action("free", (h,), reply)
        self.stalled = []
        free = self.count_of(replies[-1])
        self.check(NO_LEAK, free >= self.num_blocks,
                   f"the search ended and every hypothesis was freed, but free_count() is "
                   f"{free} of {self.num_blocks}: {self.num_blocks - free} block(s) leaked")
        self.check(NO_EARLY_FREE, free <= self.num_blocks,
                   f"every hypothesis was freed and free_count() is {free}, more than the "
                   f"{self.num_blocks} blocks the pool has: a block was released twice")

    # -- checks ----------------------------------------------------------------------
    def succeeded(self, prop: str, reply, what: str) -> None:
        self.check(prop, reply.raised is None,
                   f"{what} {reply.show()}; it is a valid call on a live sequence")

    def judge_action(self, method: str, args: tuple, reply) -> None:
        what = f"{method}({', '.join(map(repr, args))})"
        if method == "free":
            self.check(NO_EARLY_FREE, reply.raised is None,
                       f"{what} {reply.show()}: freeing a live sequence must succeed (a "
                       "'double free' means a block lost its references twice)")
        else:
            self.succeeded(CONTENT, reply, what)

    def judge_append(self, h: int, reply, outcome: str) -> None:
        """The append's outcome against the cheapest layout's: MemoryError exactly when it
        needs a block (to open one, or to copy a shared one) and none is free."""
        what = f"append({h})"
        shown = reply.show() if reply.raised else "returned " + reply.show()
        if outcome in FULL:
            need = "to open a new block" if outcome == FULL_OPEN else \
                "for a copy of the block it shares"
            self.check(OUT_OF_BLOCKS, reply.raised_builtin("MemoryError"),
                       f"{what} {shown}, but it needs a block {need} and the live hypotheses "
                       f"hold all {self.num_blocks}: expected MemoryError")
            return
        if reply.raised_builtin("MemoryError"):
            if outcome == IN_PLACE:
                self.check(MIN_COPIES, False,
                           f"{what} raised MemoryError, but hypothesis {h} is the only reader "
                           "of the block it writes into: it writes in place, needing no block")
            self.check(NO_LEAK, False,
                       f"{what} raised MemoryError, but the live hypotheses read fewer than "
                       f"the pool's {self.num_blocks} blocks, so one is free for it: blocks "
                       "leaked")
        self.succeeded(CONTENT, reply, what)
        value = reply.value
        self.check(CONTENT, value is None or (
            type(value) is list and len(value) == 2 and all(type(v) is int for v in value)),
            f"{what} returned {value!r}, expected None or (source, destination)")

    def count_of(self, reply) -> int:
        prop = NO_EARLY_FREE if self.focus == NO_EARLY_FREE else NO_LEAK
        self.check(prop, reply.raised is None and type(reply.value) is int,
                   f"free_count() {reply.show() if reply.raised else 'returned ' + reply.show()}"
                   ", expected an int")
        return reply.value

    def read_tables(self, seqs, replies) -> dict[int, list[int]]:
        tables = {}
        for h, reply in zip(seqs, replies):
            length = len(self.model.tokens[h])
            want = blocks_for(length, self.block_size, self.window)
            table = reply.value
            self.check(CONTENT, reply.raised is None and type(table) is list
                       and len(table) == want
                       and all(type(b) is int and 0 <= b < self.num_blocks for b in table),
                       f"block_table({h}) {reply.show() if reply.raised else 'returned ' + reply.show()}"
                       f": expected {want} block id(s) in 0..{self.num_blocks - 1} for "
                       f"{length} tokens")
            tables[h] = table
        return tables

    def check_append(self, h: int, before: list[int], after: list[int], length: int,
                     copy) -> None:
        """An append touches one entry: the block the token goes into, or a copy of it."""
        opens = length % self.block_size == 0
        if opens and (self.window is None or len(before) < self.window):
            self.check(CONTENT, after[:-1] == before and after[-1] not in before,
                       f"append({h}) opened a new block, so block_table({h}) should be "
                       f"{before} plus one fresh block, but it is {after}")
            return
        ring = opens                            # the window is full: reuse the oldest block
        kept, target = (before[1:], before[0]) if ring else (before[:-1], before[-1])
        where = (f"block {target}, the block that left its window" if ring
                 else f"block {target}, its last block")
        self.check(CONTENT, after[:-1] == kept,
                   f"after append({h}), block_table({h}) is {after} but was {before}: an "
                   f"append changes only the entry for the block the token goes into")
        if copy is None:
            self.check(CONTENT, after[-1] == target,
                       f"append({h}) returned None, so the token goes into {where}, but "
                       f"block_table({h}) now ends with block {after[-1]}")
        else:
            self.check(CONTENT, list(copy) == [target, after[-1]],
                       f"append({h}) returned the copy {tuple(copy)}, but hypothesis {h} "
                       f"wrote into {where}, and moved to block {after[-1]}: a copy is "
                       f"(source, destination) = ({target}, {after[-1]})")

    def check_pool(self, before: dict[int, list[int]], after: dict[int, list[int]],
                   free_reply) -> None:
        """free_count() against the blocks live hypotheses read; new blocks were free."""
        free = self.count_of(free_reply)
        held = set().union(*map(set, after.values()))
        unheld = self.num_blocks - len(held)
        self.check(NO_EARLY_FREE, free <= unheld,
                   f"free_count() is {free}, but live hypotheses read {len(held)} of the "
                   f"{self.num_blocks} blocks, so at most {unheld} are free: a block still "
                   "read was released")
        self.check(NO_LEAK, free >= unheld,
                   f"free_count() is {free}, but live hypotheses read only {len(held)} of the "
                   f"{self.num_blocks} blocks: {unheld - free} block(s) are held by nobody "
                   "and not free")
        for h, table in after.items():
            for block in set(table) - set(before[h]):
                other = next((o for o, t in after.items()
                              if o != h and block in t and block in before[o]), None)
                self.check(NO_EARLY_FREE, other is None,
                           f"hypothesis {h} got block {block}, which hypothesis {other} read "
                           "before this step and still reads: a block was handed out while "
                           "referenced")
                twice = next((o for o, t in after.items() if o != h and block in t
                              and block not in before[o]), None)
                self.check(NO_EARLY_FREE, twice is None,
                           f"block {block} went to both hypothesis {h} and hypothesis "
                           f"{twice} in one step, though neither read it before: only a fork "
                           "may share a block")
        self.tables.update(after)

    def write(self, h: int, position: int, token: int) -> None:
        length = len(self.model.tokens[h])
        block, slot = slot_of(self.tables[h], length, position, self.block_size, self.window)
        self.memory.setdefault(block, [None] * self.block_size)[slot] = token

    def reads_back(self, seqs) -> None:
        for h in seqs:
            length = len(self.model.tokens[h])
            for p, token in self.model.expected(h).items():
                block, slot = slot_of(self.tables[h], length, p, self.block_size, self.window)
                got = self.memory.get(block, [None] * self.block_size)[slot]
                self.check(CONTENT, got == token,
                           f"after beam step {self.step}, hypothesis {h} reads token {got} at "
                           f"position {p} (block {block}, slot {slot}); the beam search that "
                           f"keeps full copies has token {token} there")


EXERCISE = Exercise(
    name="beam-fork",
    question="q46",
    title="Beam search on forked block tables, copying only what is shared",
    spec=SPEC,
    class_name="BlockTables",
    methods=METHODS,
    properties=PROPERTIES,
    machine=BeamMachine,
    home=Path(__file__).parent,
    reference=Path(__file__).resolve().parents[3] / "solutions" / "exercises" / "beam_fork.py",
    default_examples=100,
    steps=STEPS,
    paths=("search: windowed", "pool: roomy", "pool: tight", "pool: short", "start: exact fit",
           "start: pool short", "step: a parent freed after its children forked",
           "append: opens a block", "append: copies", "append: writes in place",
           "append: copies (ring)", "append: writes in place (ring)",
           "append: pool empty (to open a block)", "append: pool empty (to copy a shared block)"),
)
