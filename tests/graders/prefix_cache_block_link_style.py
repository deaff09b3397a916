"""The q47 reference with its parent link to a physical block instead of a shared record.

Each block keeps (parent block, that block's generation, own tokens, extra keys, key); a
block's generation goes up each time its memory is reused, so a link to a reused block no
longer vouches for it. Under this interface that never decides a hit (a child is always evicted
before the parent copy it links to; test_hash_prefix_cache grades the file without the bump):
the generation guards eviction by block id, which the interface does not have. A hit on
block i must link to the very block this request matched at i - 1. That is safe whatever the
pick; it is complete only because every request picks the same copy of a duplicated prefix
(the first in its key's bucket, as vLLM's get_one_block does), so children link to a copy that
outlives them. With PICK_LAST the design loses hits.
"""

from collections import OrderedDict, deque

ROOT = -1
PICK_LAST = False  # pick the newest verified copy instead of the oldest (the test flips it)


class PrefixCache:
    def __init__(self, num_blocks, block_size, hash_space):
        self.block_size, self.hash_space = block_size, hash_space
        self.ref_counts = [0] * num_blocks
        self.links = [None] * num_blocks  # block -> (parent, parent gen, own, extra, key)
        self.generation = [0] * num_blocks
        self.cached = {}
        self.empty = deque(range(num_blocks))
        self.evictable = OrderedDict()
        self.tables = {}

    def match(self, tokens, extra_keys):
        size, extra = self.block_size, tuple(extra_keys)
        chain, found, key = [], [], ROOT
        for end in range(size, len(tokens) + 1, size):
            own = tuple(tokens[end - size:end])
            key = hash((key, own, extra)) % self.hash_space
            chain.append((key, own))
            if len(found) == len(chain) - 1:
                parent = (found[-1], self.generation[found[-1]]) if found else (None, 0)
                bucket = self.cached.get(key, [])
                for block in (reversed(bucket) if PICK_LAST else bucket):
                    if self.links[block][:4] == (*parent, own, extra):
                        found.append(block)
                        break
        return chain, found[:(len(tokens) - 1) // size]

    def lookup(self, tokens, extra_keys):
        return self.match(tokens, extra_keys)[1]

    def allocate(self, request_id, tokens, extra_keys):
        chain, hits = self.match(tokens, extra_keys)
        misses = -(-len(tokens) // self.block_size) - len(hits)
        revived = [b for b in hits if self.ref_counts[b] == 0]
        if misses + len(revived) > self.free_count():
            raise MemoryError(f"need {misses + len(revived)} free blocks, have {self.free_count()}")
        for block in hits:
            self.evictable.pop(block, None)
            self.ref_counts[block] += 1
        table = hits + [self._take_free() for _ in range(misses)]
        for i in range(len(hits), len(chain)):
            key, own = chain[i]
            parent = (table[i - 1], self.generation[table[i - 1]]) if i else (None, 0)
            self.links[table[i]] = (*parent, own, tuple(extra_keys), key)
            self.cached.setdefault(key, []).append(table[i])
        self.tables[request_id] = table
        return table, len(hits) * self.block_size

    def _take_free(self):
        if self.empty:
            block = self.empty.popleft()
        else:
            block, _ = self.evictable.popitem(last=False)
            key = self.links[block][4]
            self.cached[key].remove(block)
            if not self.cached[key]:
                del self.cached[key]
            self.links[block] = None
        self.generation[block] += 1  # its memory is reused: old links to it stop vouching
        self.ref_counts[block] = 1
        return block

    def free(self, request_id):
        for block in reversed(self.tables.pop(request_id)):
            self.ref_counts[block] -= 1
            if self.ref_counts[block] == 0 and self.links[block] is None:
                self.empty.append(block)
            elif self.ref_counts[block] == 0:
                self.evictable[block] = None

    def block_hash(self, block):
        link = self.links[self._check(block)]
        return None if link is None else link[4]

    def refcount(self, block):
        return self.ref_counts[self._check(block)]

    def _check(self, block):
        if not 0 <= block < len(self.ref_counts):
            raise ValueError(f"block {block} is out of range")
        return block

    def free_count(self):
        return len(self.empty) + len(self.evictable)
