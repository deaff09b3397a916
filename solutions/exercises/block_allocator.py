"""Reference solution for q43: a reference-counted KV block pool with copy-on-write.

The tone of nano-vllm's BlockManager: a free list, a refcount per block, and nothing else.
Every method validates before it mutates, so a refused call changes nothing.
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
        self._check_live(block)
        self.ref_counts[block] -= 1
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
