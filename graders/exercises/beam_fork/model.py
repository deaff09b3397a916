"""The oracle for beam-fork: a beam search that never pages, and the copy bound.

`BeamModel` keeps every live hypothesis's full token list (a copy per hypothesis, the naive
cache), so what a hypothesis must read is never in doubt. Beside it, `shadow` keeps which
hypotheses share which block in the cheapest copy-on-write layout (abstract ids, not the
candidate's), which is all the copy bound needs: a block that k live hypotheses write into
in one step costs k - 1 copies, because the last of them is its sole owner by then.
"""

from __future__ import annotations

from itertools import count


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

    def append_all(self, tokens: dict[int, int]) -> int:
        """Every hypothesis in `tokens` (in that order) appends one token. Returns the
        fewest copies this costs with copy-on-write: per written block, its live holders
        minus one (the last writer owns it alone and writes in place)."""
        targets = {seq: self._target(seq) for seq in tokens}
        writers: dict[int, list[int]] = {}         # written block -> hypotheses writing it
        for seq, target in targets.items():
            if target is not None:
                writers.setdefault(target, []).append(seq)
        copies = 0
        for block, seqs in writers.items():
            holders = sum(block in table for table in self.shadow.values())
            keeper = seqs[-1] if holders == len(seqs) else None
            copies += len(seqs) - (keeper is not None)
            for seq in seqs:
                self._place(seq, block if seq == keeper else next(self._ids))
        for seq, token in tokens.items():
            if targets[seq] is None:
                self.shadow[seq].append(next(self._ids))   # a fresh block, nothing to copy
            self.tokens[seq].append(token)
        return copies

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
