"""Reference solution for q47: automatic prefix caching over a block pool, after vLLM v1.

A full block is known by a chained hash of (parent hash, its tokens, extra keys). A freed
block keeps that identity and stays hittable until its memory is reused. Empty free blocks
are handed out first, then cached ones least recently freed first. Unlike vLLM, a hit is
trusted only after the block's whole prefix is compared, so a colliding hash costs a miss,
never another request's KV.
"""

from collections import OrderedDict, deque

ROOT = -1  # the parent hash of a prompt's first block


class PrefixCache:
    def __init__(self, num_blocks, block_size, hash_space):
        self.block_size, self.hash_space = block_size, hash_space
        self.ref_counts = [0] * num_blocks
        self.hashes = [None] * num_blocks    # block -> chained hash of the prefix it holds
        self.prefixes = [None] * num_blocks  # block -> (extra keys, tokens 0..end): its KV's source
        self.cached = {}                     # hash -> blocks holding a prefix with that hash
        self.empty = deque(range(num_blocks))  # free, holding nothing worth keeping
        self.evictable = OrderedDict()       # free but still cached, least recently freed first
        self.tables = {}                     # request id -> block table

    def block_identities(self, tokens, extra_keys):
        """(hash, prefix) of every full block of a prompt: the chain vLLM computes per request."""
        out, parent, size = [], ROOT, self.block_size
        for end in range(size, len(tokens) + 1, size):
            block = (parent, tuple(tokens[end - size:end]), tuple(extra_keys))
            parent = hash(block) % self.hash_space
            out.append((parent, (tuple(extra_keys), tuple(tokens[:end]))))
        return out

    def _find(self, block_hash, prefix):
        for block in self.cached.get(block_hash, ()):
            if self.prefixes[block] == prefix:  # a hash match is a hint; the prefix is the proof
                return block
        return None

    def lookup(self, tokens, extra_keys):
        """The cached blocks a new request with this prompt would hit; changes nothing."""
        hits = []
        identities = self.block_identities(tokens, extra_keys)
        for block_hash, prefix in identities[:(len(tokens) - 1) // self.block_size]:
            block = self._find(block_hash, prefix)  # the last token is always recomputed
            if block is None:
                break  # chained: nothing after a miss can hit
            hits.append(block)
        return hits

    def allocate(self, request_id, tokens, extra_keys):
        identities = self.block_identities(tokens, extra_keys)
        hits = self.lookup(tokens, extra_keys)
        misses = -(-len(tokens) // self.block_size) - len(hits)
        revived = [b for b in hits if self.ref_counts[b] == 0]
        if misses + len(revived) > self.free_count():
            raise MemoryError(f"need {misses + len(revived)} free blocks, have {self.free_count()}")
        for block in hits:
            self.evictable.pop(block, None)
            self.ref_counts[block] += 1
        table = hits + [self._take_free() for _ in range(misses)]
        for block, (block_hash, prefix) in zip(table[len(hits):], identities[len(hits):]):
            self.hashes[block], self.prefixes[block] = block_hash, prefix
            self.cached.setdefault(block_hash, []).append(block)  # duplicates are fine
        self.tables[request_id] = table
        return table, len(hits) * self.block_size

    def _take_free(self):
        if self.empty:
            block = self.empty.popleft()
        else:
            block, _ = self.evictable.popitem(last=False)  # evict the least recently freed
            self.cached[self.hashes[block]].remove(block)  # this block only: a duplicate stays
            if not self.cached[self.hashes[block]]:
                del self.cached[self.hashes[block]]
            self.hashes[block] = self.prefixes[block] = None
        self.ref_counts[block] = 1
        return block

    def free(self, request_id):
        for block in reversed(self.tables.pop(request_id)):  # tail first: a chain ends shorter
            self.ref_counts[block] -= 1
            if self.ref_counts[block] == 0:
                if self.hashes[block] is None:
                    self.empty.append(block)
                else:
                    self.evictable[block] = None

    def block_hash(self, block):
        return self.hashes[self._check(block)]

    def refcount(self, block):
        return self.ref_counts[self._check(block)]

    def _check(self, block):
        if not 0 <= block < len(self.ref_counts):  # a negative index would answer for another
            raise ValueError(f"block {block} is out of range")
        return block

    def free_count(self):
        return len(self.empty) + len(self.evictable)
