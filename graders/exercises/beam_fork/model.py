"""The oracle for beam-fork: a beam search that never pages, and the copy bound.

`BeamModel` keeps every live hypothesis's full token list (a copy per hypothesis, the naive
cache), so what a hypothesis must read is never in doubt. Beside it, `shadow` keeps which
hypotheses share which block in the cheapest copy-on-write layout (abstract ids, not the
candidate's), which is all the copy bound needs: a block that k live hypotheses write into
in one step costs k - 1 copies, because the last of them is its sole owner by then. Over a
pool of a given size it also says which append finds no free block (append_each).
"""

from __future__ import annotations

from itertools import count

FRESH, COPY, IN_PLACE = "opens a block", "copies", "writes in place"
FULL_OPEN, FULL_COPY = "pool empty (to open a block)", "pool empty (to copy a shared block)"
FULL = (FULL_OPEN, FULL_COPY)


def blocks_for(length: int, block_size: int, window: int | None) -> int:
    """How many blocks a sequence of `length` tokens reads: all, or the last `window`."""
    blocks = -(-length // block_size)
    return blocks if window is None else min(blocks, window)


def slot_of(table: list[int], length: int, position: int, block_size: int,
            window: int | None) -> tuple[int, int]:
    """(block, slot) holding `position` for a table covering the last len(table) blocks.

    With a window the blocks form a ring: logical block i lives where logical block i + W
    will, so a position just behind the window shares the last block with the newest ones.
    """
    first = -(-length // block_size) - len(table)   # logical index of table[0]
    index = position // block_size - first
    if index < 0:
        index %= window
    return table[index], position % block_size


def readable(length: int, block_size: int, window: int | None) -> range:
    """Positions attention reads: all of them, or the last window * block_size."""
    if window is None:
        return range(length)
    return range(max(0, length - window * block_size), length)


class BeamModel:
    def __init__(self, block_size: int, window: int | None):
        self.block_size, self.window = block_size, window
        self.tokens: dict[int, list[int]] = {}     # hypothesis -> its full token list
        self.shadow: dict[int, list[int]] = {}     # hypothesis -> abstract blocks it reads
        self._ids = count()

    def start(self, seq: int, prompt: list[int]) -> None:
        self.tokens[seq] = list(prompt)
        n = blocks_for(len(prompt), self.block_size, self.window)
        self.shadow[seq] = [next(self._ids) for _ in range(n)]

    def fork(self, parent: int, child: int) -> None:
        self.tokens[child] = list(self.tokens[parent])
        self.shadow[child] = list(self.shadow[parent])

    def free(self, seq: int) -> None:
        del self.tokens[seq], self.shadow[seq]

    def held(self) -> int:
        """Blocks the cheapest layout holds: the distinct blocks live hypotheses read."""
        return len(set().union(*map(set, self.shadow.values())))

    def append_all(self, tokens: dict[int, int], num_blocks: int | None = None) -> int:
        """Every hypothesis in `tokens` (in that order) appends one token; returns the copies
        this costs (see append_each)."""
        return sum(o == COPY for o in self.append_each(tokens, num_blocks).values())

    def append_each(self, tokens: dict[int, int], num_blocks: int | None = None) -> dict:
        """Every hypothesis in `tokens` appends one token, in that order, in the cheapest
        copy-on-write layout over a pool of `num_blocks` (None: unlimited). Returns each
        one's outcome: FRESH (it opens a new block), COPY (it writes into a block another
        live hypothesis still reads, so it moves to a copy), IN_PLACE (it is the block's
        only reader), or one of FULL (it needs a block and none is free: MemoryError,
        nothing changes, the token is not appended). So a block k live hypotheses write into costs
        k - 1 copies: each writer that finds it shared moves away, and the last one finds
        itself the sole owner."""
        outcomes = {}
        for seq, token in tokens.items():
            target = self._target(seq)
            shared = target is not None and sum(
                target in table for table in self.shadow.values()) > 1
            needs = target is None or shared
            if needs and num_blocks is not None and self.held() >= num_blocks:
                outcomes[seq] = FULL_COPY if shared else FULL_OPEN
                continue
            if target is None:
                self.shadow[seq].append(next(self._ids))   # a fresh block, nothing to copy
                outcomes[seq] = FRESH
            else:
                self._place(seq, next(self._ids) if shared else target)
                outcomes[seq] = COPY if shared else IN_PLACE
            self.tokens[seq].append(token)
        return outcomes

    def _opens(self, seq: int) -> bool:
        return len(self.tokens[seq]) % self.block_size == 0

    def _target(self, seq: int) -> int | None:
        """The existing block this append writes into; None when it opens a fresh one."""
        table = self.shadow[seq]
        if not self._opens(seq):
            return table[-1]
        if self.window is not None and len(table) == self.window:
            return table[0]                         # the ring reuses the oldest block
        return None

    def _place(self, seq: int, new: int) -> None:
        table = self.shadow[seq]
        if self._opens(seq):                        # ring: oldest out, reused block in
            table.pop(0)
            table.append(new)
        else:
            table[-1] = new

    def expected(self, seq: int) -> dict[int, int]:
        """position -> token, for every position the hypothesis reads."""
        tokens = self.tokens[seq]
        return {p: tokens[p] for p in readable(len(tokens), self.block_size, self.window)}
