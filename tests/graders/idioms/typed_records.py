"""A block pool written with typing's and the data model's everyday tools: NamedTuple,
namedtuple with defaults, a dataclass, TypeVar and Generic, NewType, a functional Enum."""

from __future__ import annotations

import enum
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, NewType, Optional, TypeVar

BlockId = NewType("BlockId", int)
State = enum.Enum("State", "FREE USED")
T = TypeVar("T")
Copy = namedtuple("Copy", "source destination", defaults=[None])


class Target(NamedTuple):
    block: int
    copy: Optional[tuple] = None


class Stack(Generic[T]):
    def __init__(self) -> None:
        self.items: list[T] = []

    def push(self, item: T) -> None:
        self.items.append(item)

    def pop(self) -> T:
        return self.items.pop()


@dataclass
class Block:
    id: BlockId
    refs: int = 0
    state: State = State.FREE
    history: list = field(default_factory=list)


class BlockAllocator:
    def __init__(self, num_blocks: int):
        self.blocks = [Block(BlockId(i)) for i in range(num_blocks)]
        self.free_ids: Stack[int] = Stack()
        for i in reversed(range(num_blocks)):
            self.free_ids.push(i)

    def _live(self, block: int) -> Block:
        if not 0 <= block < len(self.blocks) or self.blocks[block].state is State.FREE:
            raise ValueError(f"block {block} is not allocated")
        return self.blocks[block]

    def allocate(self) -> int:
        if not self.free_ids.items:
            raise MemoryError("no free block")
        b = self.blocks[self.free_ids.pop()]
        b.refs, b.state = 1, State.USED
        return int(b.id)

    def fork(self, block_table):
        shared = [self._live(i) for i in set(block_table)]
        for b in shared:
            b.refs += 1

    def free(self, block):
        b = self._live(block)
        b.refs -= 1
        if not b.refs:
            b.state = State.FREE
            self.free_ids.push(block)

    def copy_on_write(self, block):
        b = self._live(block)
        if b.refs == 1:
            return tuple(Target(block))
        fresh = self.allocate()
        b.refs -= 1
        return tuple(Target(fresh, tuple(Copy(block, fresh))))

    def refcount(self, block):
        if not 0 <= block < len(self.blocks):
            raise ValueError(f"block {block} is out of range")
        return self.blocks[block].refs

    def free_count(self):
        return len(self.free_ids.items)
