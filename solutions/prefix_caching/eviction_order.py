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
from dataclasses import dataclass
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
        self._cached_free = []                     # "random" only: the queue's blocks, indexable,
        self._slot = {}                            # so that a random pick costs O(1)

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

    def _enqueue(self, block):
        self.queue[block] = None
        if self.order == "random":
            self._slot[block] = len(self._cached_free)
            self._cached_free.append(block)

    def _dequeue(self, block):
        del self.queue[block]
        if self.order == "random":
            i = self._slot.pop(block)
            last = self._cached_free.pop()
            if last != block:
                self._cached_free[i] = last
                self._slot[last] = i

    def _random_victim(self):
        return self._cached_free[self.rng.randrange(len(self._cached_free))]

    def _take(self, victims):
        if self.empty:
            return self.empty.popleft()
        block = self._random_victim() if self.order == "random" else next(victims)
        self._dequeue(block)
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
            if block in self.queue:
                self._dequeue(block)
        evictions = max(0, needed - len(self.empty))
        victims = iter([] if self.order == "random" else list(islice(self.queue, evictions)))
        table = hits + [self._take(victims) for _ in range(needed)]
        for block, key in zip(table[len(hits):], keys[len(hits):]):
            self.key_of[block] = key
            self.blocks_of.setdefault(key, []).append(block)
        for block in (reversed(table) if self.order == "tail-first" else table):
            if self.key_of[block] is None:
                self.empty.append(block)
            else:
                self._enqueue(block)
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


@dataclass(frozen=True)
class SteadyReplay:
    """One order replayed until the pool is full and turning over, read over a steady window."""

    order: str
    pool_blocks: int
    requests: int
    filled_at: int             # the request after which the pool first had no empty block
    window_start: int          # first request of the window: the pool filled, plus a margin
    hit_rate: float            # prompt tokens served from cache / prompt tokens, over the window
    stranded_share: float      # mean share of the pool stranded, over the window's samples
    stranded_blocks: float     # the same, in blocks
    samples: tuple             # (request index, stranded blocks) over the whole replay


def steady_replay(trace, pool_blocks: int, block_size: int, order: str, samples: int = 40,
                  seed: int = 0) -> SteadyReplay:
    """Replay `trace` (turns with `.prompt` and `.answer`) through a `ChainPool` and read it in
    steady state: the window starts once the pool has no empty block left, plus a quarter of the
    requests that remain, so that the filling transient is not averaged in. Stranded blocks are
    counted `samples` times over the whole replay (the transient shows in `samples`). Raises if
    the trace never fills the pool or leaves too short a window: that needs a longer trace, not a
    number."""
    pool = ChainPool(pool_blocks, block_size, order, seed=seed)
    every = max(1, len(trace) // samples)
    hits, prompts, series, filled_at = [], [], [], None
    for i, r in enumerate(trace):
        hits.append(pool.serve(r.prompt, r.answer))
        prompts.append(len(r.prompt))
        if filled_at is None and not pool.empty:
            filled_at = i
        if i % every == 0:
            series.append((i, pool.stranded_blocks()))
    if filled_at is None:
        raise ValueError(f"the trace ({len(trace)} requests) never fills a {pool_blocks}-block pool: no steady state")
    start = filled_at + (len(trace) - filled_at) // 4
    in_window = [n for i, n in series if i >= start]
    if len(trace) - start < 100 or len(in_window) < 5:
        raise ValueError(f"only {len(trace) - start} requests after the pool fills at request {filled_at}: "
                         "replay a longer trace")
    mean_stranded = sum(in_window) / len(in_window)
    return SteadyReplay(order, pool_blocks, len(trace), filled_at, start, sum(hits[start:]) / sum(prompts[start:]),
                        mean_stranded / pool_blocks, mean_stranded, tuple(series))


# A full-scale replay, recorded because it takes about 45 s of CPU (far beyond a notebook's 10 s):
# Llama 3.1 8B on one H100 SXM, vLLM-sized pool of 28,614 16-token blocks, 64 open conversations,
# ChatTraceSpec(conversations=1600, concurrency=64, seed=1) (6,286 requests), steady_replay(..., samples=FULL_SCALE_SAMPLES).
# Re-run with `python -m solutions.prefix_caching.eviction_order`; tests/test_prefix_kit.py checks
# that a half-scale replay (the open working set's ratio to the pool kept) agrees with it.
# Each order: (token hit rate over the window, mean stranded share of the pool, mean stranded blocks).
FULL_SCALE_POOL_BLOCKS, FULL_SCALE_OPEN_CONVERSATIONS = 28_614, 64
# Stranded blocks counted 400 times over the replay (every ~16 requests): at the default 40 the
# head-first mean rests on 23 window samples (every 157th request from request 2,805 of 6,286) and read
# 53 blocks; 400 and 2,000 samples give 69-70.
FULL_SCALE_SAMPLES = 400
FULL_SCALE_STEADY = {
    "tail-first": (0.9622, 0.0, 0.0),
    "head-first": (0.9622, 0.0024, 69.7),
    "random": (0.7417, 0.7899, 22601.3),
}


def _full_scale() -> dict:
    from solutions.serving.chat_trace import ChatTraceSpec, chat_trace
    trace = chat_trace(ChatTraceSpec(conversations=1600, concurrency=FULL_SCALE_OPEN_CONVERSATIONS, seed=1))
    runs = {order: steady_replay(trace, FULL_SCALE_POOL_BLOCKS, 16, order, samples=FULL_SCALE_SAMPLES) for order in ORDERS}
    return {order: (round(r.hit_rate, 4), round(r.stranded_share, 4), round(r.stranded_blocks, 1))
            for order, r in runs.items()}


if __name__ == "__main__":
    print(_full_scale())
