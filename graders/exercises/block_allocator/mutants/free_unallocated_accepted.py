"""Mutant: free() of a block that was never allocated puts it on the free list again.

Trusting the caller: the free list now holds a block twice, and two sequences will later receive it.

Property: refcounts
"""

from collections import deque


class BlockAllocator:
    def __init__(self, num_blocks: int):
        self.ref_counts = [0] * num_blocks
        self.free_blocks = deque(range(num_blocks))

    def _check_live(self, block: int) -> None:
        if not 0 <= block < len(self.ref_counts) or self.ref_counts[block] == 0:
            raise ValueError(f"block {block} is not allocated")

    def allocate(self) -> int:
        if not self.free_blocks:
            raise MemoryError("no free KV blocks")
        block = self.free_blocks.popleft()
        self.ref_counts[block] = 1
        return block

    def fork(self, block_table: list[int]) -> None:
        shared = set(block_table)  # a sliding-window table may list a block twice
        for block in shared:
            self._check_live(block)
        for block in shared:
            self.ref_counts[block] += 1

    def free(self, block: int) -> None:
        if not 0 <= block < len(self.ref_counts):
            raise ValueError(f"block {block} is out of range")
        self.ref_counts[block] = max(0, self.ref_counts[block] - 1)
        if self.ref_counts[block] == 0:
            self.free_blocks.append(block)

    def copy_on_write(self, block: int) -> tuple[int, tuple[int, int] | None]:
        self._check_live(block)
        if self.ref_counts[block] == 1:
            return block, None  # sole owner: append in place
        fresh = self.allocate()  # raises MemoryError before anything changed
        self.ref_counts[block] -= 1  # the writer leaves; the other owners keep `block`
        return fresh, (block, fresh)

    def refcount(self, block: int) -> int:
        if not 0 <= block < len(self.ref_counts):
            raise ValueError(f"block {block} is out of range")
        return self.ref_counts[block]

    def free_count(self) -> int:
        return len(self.free_blocks)
