"""A block pool that leans on the standard library: hashlib, logging, threading, queue,
struct, heapq, bisect, functools, itertools, pickle and traceback, each doing a small job."""

import bisect
import functools
import hashlib
import heapq
import itertools
import logging
import pickle
import queue
import struct
import threading
import traceback

log = logging.getLogger("pool")
log.addHandler(logging.NullHandler())


@functools.total_ordering
class Slot:
    def __init__(self, block):
        self.block = block

    def __eq__(self, other):
        return self.block == other.block

    def __lt__(self, other):
        return self.block < other.block


class BlockAllocator:
    def __init__(self, num_blocks: int):
        self.lock = threading.Lock()
        self.free_heap = [Slot(i) for i in range(num_blocks)]  # lowest id first
        heapq.heapify(self.free_heap)
        self.refs = dict.fromkeys(range(num_blocks), 0)
        self.used = []  # sorted ids with references
        self.events = queue.SimpleQueue()
        self.ids = itertools.count()
        self.digest = hashlib.sha256(struct.pack("<q", num_blocks)).hexdigest()

    def _live(self, block):
        if self.refs.get(block, 0) == 0:
            raise ValueError(f"block {block} is not allocated")

    def allocate(self):
        with self.lock:
            if not self.free_heap:
                log.debug("pool exhausted")
                raise MemoryError("no free block")
            block = heapq.heappop(self.free_heap).block
            self.refs[block] = 1
            bisect.insort(self.used, block)
            self.events.put((next(self.ids), "allocate", block))
            return block

    def fork(self, block_table):
        try:
            for block in set(block_table):
                self._live(block)
        except ValueError:
            log.debug("refused fork:\n%s", traceback.format_exc())  # reads this file's source
            raise
        for block in set(block_table):
            self.refs[block] += 1

    def free(self, block):
        self._live(block)
        self.refs[block] -= 1
        if not self.refs[block]:
            del self.used[bisect.bisect_left(self.used, block)]
            heapq.heappush(self.free_heap, Slot(block))

    def copy_on_write(self, block):
        self._live(block)
        if self.refs[block] == 1:
            return block, None
        snapshot = pickle.dumps((self.refs, self.free_heap))  # Slot pickles by name
        try:
            fresh = self.allocate()
        except MemoryError:
            self.refs, self.free_heap = pickle.loads(snapshot)
            log.warning("copy-on-write failed:\n%s", traceback.format_exc())  # reads the source
            raise
        self.refs[block] -= 1
        return fresh, (block, fresh)

    def refcount(self, block):
        if block not in self.refs:
            raise ValueError(f"block {block} is out of range")
        return self.refs[block]

    def free_count(self):
        return len(self.free_heap)
