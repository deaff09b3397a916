"""Which cached block a prefix cache gives up first, and what the wrong choice strands.

A lookup walks a prompt's chain of full blocks from the first and stops at the first miss, so
a cached block is worth keeping only while every block before it in its chain is resident. A
block whose ancestor was evicted is *stranded*: it holds valid KV and occupies memory, and no
lookup can ever reach it again.

`ChainPool` replays requests one at a time over a pool of blocks, the way vLLM's block pool
treats them: a request holds its blocks while it runs; freed blocks keep their identity in a
queue, least recently freed first; an empty block is handed out before a cached one is evicted.
The one knob is `order`, how a request's blocks enter the queue when it finishes:

- "tail-first": the deepest block first (vLLM frees a request's blocks in reverse), so within
  a chain the tail is always evicted before its head;
- "head-first": in table order, the naive loop, so the head goes first and strands the rest;
- "random": any free cached block, blind to the chain (what a per-block cost or frequency score
  that ignores chain position amounts to).

Only the order differs; the q47 reference (`solutions.exercises.hash_prefix_cache.PrefixCache`) replays
the same trace tail-first and must agree request for request.
"""

from __future__ import annotations

import random
from collections import OrderedDict, deque
from itertools import islice

ORDERS = ("tail-first", "head-first", "random")
ROOT = None  # the parent of a chain's first block


class ChainPool:
    def __init__(self, num_blocks: int, block_size: int, order: str = "tail-first", seed: int = 0):
        if not (isinstance(num_blocks, int) and num_blocks >= 1):
            raise ValueError(f"num_blocks must be an integer >= 1, got {num_blocks!r}")
        if not (isinstance(block_size, int) and block_size >= 1):
            raise ValueError(f"block_size must be an integer >= 1, got {block_size!r}")
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
        self.num_blocks, self.block_size, self.order = num_blocks, block_size, order
        self.empty = deque(range(num_blocks))      # free, holding nothing worth keeping
        self.queue = OrderedDict()                 # free but cached, first to be evicted first
        self.key_of = [None] * num_blocks          # block -> chain key of the prefix it holds
        self.blocks_of = {}                        # chain key -> blocks holding it (duplicates)
        self.parent = {}                           # chain key -> its parent's key (ROOT at depth 0)
        self.rng = random.Random(seed)             # "random" only: which free cached block goes

    def chain(self, tokens) -> list:
        """Chain keys of the full blocks of `tokens`: key_i names blocks 0..i, as a hash chain does."""
        keys, parent, size = [], ROOT, self.block_size
        for end in range(size, len(tokens) + 1, size):
            key = hash((parent, tuple(tokens[end - size:end])))
            self.parent.setdefault(key, parent)
            keys.append(key)
            parent = key
        return keys

    def _hits(self, keys, num_tokens):
        """Resident blocks of the longest cached prefix, stopping short of the last token."""
        hits = []
        for key in keys[:(num_tokens - 1) // self.block_size]:
            blocks = self.blocks_of.get(key)
            if not blocks:
                break
            hits.append(blocks[0])
        return hits

    def _take(self, victims):
        if self.empty:
            return self.empty.popleft()
        block = next(victims)
        del self.queue[block]
        key = self.key_of[block]
        self.blocks_of[key].remove(block)
        if not self.blocks_of[key]:
            del self.blocks_of[key]
        self.key_of[block] = None
        return block

    def serve(self, prompt, answer) -> int:
        """Run one request to completion; return its prompt tokens served from cache."""
        tokens = tuple(prompt) + tuple(answer)
        keys = self.chain(tokens)
        hits = self._hits(keys, len(tokens))
        prompt_hit_blocks = min(len(hits), (len(prompt) - 1) // self.block_size)
        needed = -(-len(tokens) // self.block_size) - len(hits)
        if needed > len(self.empty) + len(self.queue) - sum(b in self.queue for b in hits):
            raise ValueError(f"a {len(tokens)}-token request needs {needed} free blocks; "
                             f"the pool of {self.num_blocks} cannot hold it")
        for block in hits:
            self.queue.pop(block, None)
        evictions = max(0, needed - len(self.empty))
        victims = iter(self.rng.sample(list(self.queue), evictions) if self.order == "random"
                       else list(islice(self.queue, evictions)))
        table = hits + [self._take(victims) for _ in range(needed)]
        for block, key in zip(table[len(hits):], keys[len(hits):]):
            self.key_of[block] = key
            self.blocks_of.setdefault(key, []).append(block)
        for block in (reversed(table) if self.order == "tail-first" else table):
            if self.key_of[block] is None:
                self.empty.append(block)
            else:
                self.queue[block] = None
        return prompt_hit_blocks * self.block_size

    def cached_blocks(self) -> int:
        return sum(key is not None for key in self.key_of)

    def stranded_blocks(self) -> int:
        """Cached blocks that no lookup can reach: some block before them in the chain is gone."""
        reachable = {ROOT: True}

        def walk(key):
            path = []
            while key not in reachable:
                path.append(key)
                key = self.parent[key]
            ok = reachable[key]
            for k in reversed(path):
                ok = ok and k in self.blocks_of
                reachable[k] = ok
            return reachable[path[0]] if path else ok

        return sum(1 for key in self.key_of if key is not None and not walk(key))
