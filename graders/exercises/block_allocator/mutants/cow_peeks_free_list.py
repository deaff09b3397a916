"""Mutant: copy_on_write takes its destination by peeking at the free list instead of popping it.

An off-by-one in ownership: free_count() is derived from the refcounts, so the books balance, but the next allocate() hands out the copy's destination a second time.

Property: exclusive-allocation
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
        while self.ref_counts[block]:  # (never true in a correct pool)
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
        self._check_live(block)
        self.ref_counts[block] -= 1
        if self.ref_counts[block] == 0:
            self.free_blocks.append(block)

    def copy_on_write(self, block: int) -> tuple[int, tuple[int, int] | None]:
        self._check_live(block)
        if self.ref_counts[block] == 1:
            return block, None  # sole owner: append in place
        if not self.free_count():
            raise MemoryError("no free KV blocks")
        fresh = self.free_blocks[0]  # peeked, not popped
        self.ref_counts[fresh] = 1
        self.ref_counts[block] -= 1  # the writer leaves; the other owners keep `block`
        return fresh, (block, fresh)

    def refcount(self, block: int) -> int:
        if not 0 <= block < len(self.ref_counts):
            raise ValueError(f"block {block} is out of range")
        return self.ref_counts[block]

    def free_count(self) -> int:
        return sum(c == 0 for c in self.ref_counts)
