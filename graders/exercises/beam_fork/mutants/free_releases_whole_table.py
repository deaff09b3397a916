"""Mutant: free() releases every distinct block the whole table lists, inside the window or not.

The other half of vLLM issue 1556 / PR 3347: after a copy on write replaced a wrapped entry,
the table still names the old block one window back; freeing the whole table drops a
reference this sequence gave up already, so a block a sibling still reads goes back on the
free list ("Double free!" in v0). PR 3347 names this free as the cause; v0's manager at
a02da52 frees only block_table[-block_sliding_window:].

Property: no-free-while-referenced
"""


class BlockTables:
    def __init__(self, num_blocks: int, block_size: int, window_blocks: int | None = None):
        self.block_size = block_size
        self.window = window_blocks            # None: full attention
        self.ref_counts = [0] * num_blocks
        self.free_blocks = list(range(num_blocks - 1, -1, -1))   # pop() hands out 0 first
        self.tables: dict[int, list[int]] = {}
        self.lengths: dict[int, int] = {}

    def _allocate(self) -> int:
        if not self.free_blocks:
            raise MemoryError("no free KV blocks")
        block = self.free_blocks.pop()
        self.ref_counts[block] = 1
        return block

    def _release(self, block: int) -> None:
        self.ref_counts[block] -= 1
        if self.ref_counts[block] == 0:
            self.free_blocks.append(block)

    def start(self, seq_id: int, num_tokens: int) -> None:
        if seq_id in self.tables or num_tokens < 1:
            raise ValueError(f"cannot start sequence {seq_id} with {num_tokens} tokens")
        blocks = -(-num_tokens // self.block_size)
        own = blocks if self.window is None else min(blocks, self.window)
        if own > len(self.free_blocks):
            raise MemoryError("not enough free KV blocks for the prompt")
        table = [self._allocate() for _ in range(own)]
        for logical in range(own, blocks):      # past the window: reuse, like vLLM v0
            table.append(table[logical - self.window])
        self.tables[seq_id] = table
        self.lengths[seq_id] = num_tokens

    def fork(self, parent_id: int, child_id: int) -> None:
        if child_id in self.tables:
            raise ValueError(f"sequence {child_id} already exists")
        table = self.tables[parent_id]
        for block in set(self._window(table)):
            self.ref_counts[block] += 1
        self.tables[child_id] = list(table)
        self.lengths[child_id] = self.lengths[parent_id]

    def append(self, seq_id: int) -> tuple[int, int] | None:
        """Make room for one token; return the (source, destination) copy to run first, or None."""
        table, length = self.tables[seq_id], self.lengths[seq_id]
        opens_block = length % self.block_size == 0
        if opens_block and (self.window is None or len(table) < self.window):
            table.append(self._allocate())      # a fresh block: nothing to share, nothing to copy
            self.lengths[seq_id] += 1
            return None
        target = table[-self.window] if opens_block else table[-1]
        copy = None
        if self.ref_counts[target] > 1:         # someone else still reads it: copy on write
            fresh = self._allocate()            # raises before anything changed
            self._release(target)
            copy, target = (target, fresh), fresh
        if opens_block:
            table.append(target)
        else:
            table[-1] = target
        self.lengths[seq_id] += 1
        return copy

    def free(self, seq_id: int) -> None:
        for block in set(self.tables.pop(seq_id)):
            self._release(block)
        del self.lengths[seq_id]

    def block_table(self, seq_id: int) -> list[int]:
        return list(self._window(self.tables[seq_id]))

    def _window(self, table: list[int]) -> list[int]:
        return table if self.window is None else table[-self.window:]

    def free_count(self) -> int:
        return len(self.free_blocks)
