"""q43 block allocator: a paged KV cache's physical block pool with reference counts.

The model the machine keeps is just `refs` (block -> live references); every reply from
the candidate's pool is checked against it, and each check is tagged with the property it
belongs to. Block ids are the candidate's choice; the model only requires them to be free.
The machine picks live blocks by their place in hand-out order, never by id, so a pool that
hands out any free block (the lowest, the most recently freed, a random one) is driven
through the same calls on every replay.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from graders.exercise import Exercise, GradedMachine, Method, Property

CONSERVATION = "conservation"
EXCLUSIVE = "exclusive-allocation"
REFCOUNTS = "refcounts"
COW = "copy-on-write"

SPEC = """\
A paged KV cache stores each sequence's keys and values in fixed-size blocks drawn from one
pool of physical blocks, numbered 0 .. num_blocks-1. Sequences that share a prefix (parallel
sampling, beam search, a fork) share blocks, so each block carries a reference count. Write
the pool: one class, BlockAllocator, about forty lines of plain Python.

  allocate()            hand out a free block with refcount 1. No free block: raise MemoryError.
  fork(block_table)     a new sequence shares every block of `block_table` (a list of block
                        ids): each *distinct* block gains one reference, even if the table
                        lists it twice (a sliding-window table reuses blocks). If any listed
                        block is free or out of range, raise ValueError and change nothing.
  free(block)           drop one reference; at zero the block is free again. Freeing a block
                        that is already free, or was never allocated, or is out of range,
                        raises ValueError and changes nothing.
  copy_on_write(block)  a sequence is about to append into `block`. Return (target, copy):
                        `target` is the block it should write into and `copy` is None or the
                        (source, destination) pair of blocks whose contents must be copied
                        first. A free or out-of-range block raises ValueError. If a copy is
                        needed and no block is free, raise MemoryError and change nothing.
  refcount(block)       live references to `block` (0 when free); ValueError if out of range.
  free_count()          number of free blocks.

Values cross to the grader as plain data (ints, None, lists or tuples), compared by type and
value: return an int, not a bool or numpy integer.
"""

METHODS = (
    Method("__init__", ("num_blocks",), "all blocks 0..num_blocks-1 start free"),
    Method("allocate", (), "a free block, now with refcount 1; MemoryError if none", "int"),
    Method("fork", ("block_table",), "+1 reference per distinct block; ValueError if any "
           "is not allocated (no change)"),
    Method("free", ("block",), "-1 reference; free again at 0; ValueError if not allocated"),
    Method("copy_on_write", ("block",), "(block to write into, None or (src, dst) to copy); "
           "MemoryError if a copy is needed and none is free (no change)",
           "tuple[int, tuple[int, int] | None]"),
    Method("refcount", ("block",), "live references (0 when free); ValueError if out of range",
           "int"),
    Method("free_count", (), "number of free blocks", "int"),
)

PROPERTIES = (
    Property(CONSERVATION, "free blocks + referenced blocks == num_blocks, after every call"),
    Property(EXCLUSIVE, "a block handed out (allocate, or a copy's destination) was free; "
             "an empty pool raises MemoryError"),
    Property(REFCOUNTS, "refcount(b) equals the references given out, never negative; a double "
             "free, a free of a never-allocated block and a fork of a free block raise "
             "ValueError and change nothing"),
    Property(COW, "sole owner writes in place; a shared block sends the writer to a fresh "
             "block, the source loses exactly one reference, the copy is (source, destination); "
             "no free block means MemoryError and no change"),
)


class PoolMachine(GradedMachine):
    """Drives a candidate BlockAllocator; `refs` is the oracle."""

    def __init__(self):
        super().__init__()
        self.total = 0
        self.refs: dict[int, int] = {}
        self.ever: set[int] = set()  # blocks handed out at least once (for messages)

    @property
    def free(self) -> int:
        return self.total - len(self.refs)

    @initialize(num_blocks=st.integers(1, 6), forked=st.booleans())
    def create(self, num_blocks, forked):
        """Half the runs start with a forked sequence, so shared blocks show up early."""
        self.total = num_blocks
        self.construct(num_blocks)
        if forked:
            self.allocate()
            self.share(list(self.refs))

    def pick(self, data) -> int:
        """Mostly a live block (the interesting case), chosen by its place in hand-out order
        (`refs` keeps insertion order), not by id; one time in four, any id at all."""
        if self.refs and data.draw(st.integers(0, 3), label="live?"):
            return data.draw(st.sampled_from(list(self.refs)), label="block")
        return data.draw(st.integers(-1, self.total), label="block")

    def handed_out(self, prop: str, block, what: str) -> None:
        self.check(prop, 0 <= block < self.total,
                   f"{what} returned block {block}, outside 0..{self.total - 1}")
        self.check(prop, block not in self.refs,
                   f"{what} handed out block {block}, which still has {self.refs.get(block)} "
                   "reference(s)")

    @rule()
    def allocate(self):
        reply = self.call("allocate")
        if not self.free:
            self.expect_raises(EXCLUSIVE, reply, "MemoryError",
                               "allocate() on a pool with no free block")
            return
        block = self.expect_int(EXCLUSIVE, reply, "allocate()")
        self.handed_out(EXCLUSIVE, block, "allocate()")
        self.refs[block] = 1
        self.ever.add(block)

    @rule(data=st.data())
    def fork(self, data):
        size = data.draw(st.integers(1, 3), label="len")
        self.share([self.pick(data) for _ in range(size)])

    def share(self, table):
        reply = self.call("fork", table)
        what = f"fork({table!r})"
        if all(b in self.refs for b in table):
            self.expect_none(REFCOUNTS, reply, what)
            for b in set(table):
                self.refs[b] += 1
        else:
            bad = next(b for b in table if b not in self.refs)
            self.expect_raises(REFCOUNTS, reply, "ValueError",
                               f"{what} (block {bad} is not allocated)")

    @rule(data=st.data())
    def free_block(self, data):
        block = self.pick(data)
        reply = self.call("free", block)
        if block in self.refs:
            self.expect_none(REFCOUNTS, reply, f"free({block})")
            self.refs[block] -= 1
            if not self.refs[block]:
                del self.refs[block]
        else:
            why = ("out of range" if not 0 <= block < self.total else
                   "a double free" if block in self.ever else "never allocated")
            self.expect_raises(REFCOUNTS, reply, "ValueError", f"free({block}) ({why})")

    @rule(data=st.data())
    def copy_on_write(self, data):
        block = self.pick(data)
        reply = self.call("copy_on_write", block)
        what = f"copy_on_write({block})"
        owners = self.refs.get(block, 0)
        if not owners:
            self.expect_raises(COW, reply, "ValueError", f"{what} on a block that is not allocated")
            return
        if owners > 1 and not self.free:
            self.expect_raises(COW, reply, "MemoryError",
                               f"{what} on a shared block with no free block left")
            after, free_after = self.query([("refcount", (block,)), ("free_count", ())])
            self.check(COW, after.value == owners and free_after.value == 0,
                       f"after the failed {what}, refcount({block}) is {after.show()} and "
                       f"free_count() is {free_after.show()}: it should change nothing "
                       f"(refcount {owners}, 0 free)")
            return
        value = reply.value
        shaped = (reply.raised is None and type(value) is list and len(value) == 2
                  and type(value[0]) is int
                  and (value[1] is None or (type(value[1]) is list and len(value[1]) == 2
                                            and all(type(v) is int for v in value[1]))))
        self.check(COW, shaped, f"{what} {reply.show() if reply.raised else 'returned ' + reply.show()}"
                   ", expected (block, None) or (block, (source, destination))")
        target, copy = value
        if owners == 1:
            self.check(COW, target == block and copy is None,
                       f"{what} returned {value!r} but the writer is the sole owner "
                       f"(refcount 1): expected ({block}, None), write in place")
            return
        self.check(COW, target != block,
                   f"{what} returned {value!r}: the block is shared by {owners} sequences, "
                   "so the writer must move to a fresh block, not keep the original")
        self.check(COW, copy is not None, f"{what} returned {value!r}: a fresh block needs "
                   f"the contents of {block} copied into it")
        self.check(COW, copy == [block, target],
                   f"{what} returned {value!r}: the copy must be (source, destination) = "
                   f"({block}, {target})")
        self.handed_out(EXCLUSIVE, target, what)
        after, fresh = self.query([("refcount", (block,)), ("refcount", (target,))])
        self.check(COW, after.value == owners - 1,
                   f"after {what}, refcount({block}) is {after.show()}: the source must lose "
                   f"exactly one reference ({owners} -> {owners - 1})")
        self.check(COW, fresh.value == 1,
                   f"after {what}, refcount({target}) is {fresh.show()}, expected 1")
        self.refs[block] -= 1
        self.refs[target] = 1
        self.ever.add(target)

    @invariant()
    def pool_is_consistent(self):
        if not self.total:
            return
        outside = (-1, self.total)  # Python's list[-1] would answer for the last block
        replies = self.query([("free_count", ())] +
                             [("refcount", (b,)) for b in range(self.total)] +
                             [("refcount", (b,)) for b in outside])
        for b, reply in zip(outside, replies[-2:]):
            self.expect_raises(REFCOUNTS, reply, "ValueError", f"refcount({b}) (out of range)")
        replies = replies[:-2]
        free = self.expect_int(CONSERVATION, replies[0], "free_count()")
        counts = [self.expect_int(REFCOUNTS, r, f"refcount({b})")
                  for b, r in enumerate(replies[1:])]
        referenced = sum(c > 0 for c in counts)
        self.check(REFCOUNTS, all(c >= 0 for c in counts),
                   f"a refcount went negative: {counts}")
        self.check(CONSERVATION, free + referenced == self.total,
                   f"free_count() is {free} and {referenced} block(s) have references, but "
                   f"the pool has {self.total} blocks (refcounts {counts})")
        for b, c in enumerate(counts):
            self.check(REFCOUNTS, c == self.refs.get(b, 0),
                       f"refcount({b}) is {c} but {self.refs.get(b, 0)} reference(s) to it "
                       "are live")
        self.check(CONSERVATION, free == self.free,
                   f"free_count() is {free} but {self.free} block(s) have no references")


EXERCISE = Exercise(
    name="block-allocator",
    question="q43",
    title="A reference-counted KV block pool with copy-on-write",
    spec=SPEC,
    class_name="BlockAllocator",
    methods=METHODS,
    properties=PROPERTIES,
    machine=PoolMachine,
    home=Path(__file__).parent,
    reference=Path(__file__).resolve().parents[3] / "solutions" / "exercises" / "block_allocator.py",
)
