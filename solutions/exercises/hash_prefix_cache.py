"""Reference solution for q47: automatic prefix caching over a block pool, after vLLM v1.

Blocks are keyed by a chained hash and stay hittable after they are freed, until reused. Unlike
vLLM, a key match is only a hint: a hit is proved by the block's own tokens and extra keys and a
parent link to the prefix matched one block earlier, which by induction proves the whole prefix.
"""

from collections import OrderedDict, deque

ROOT = -1  # the parent key of a prompt's first block


class Prefix:
    """What a block's KV was computed from; never changed, and shared by every copy of it."""

    def __init__(self, parent, tokens, extra, key):
        self.parent, self.tokens, self.extra, self.key = parent, tokens, extra, key


class PrefixCache:
    def __init__(self, num_blocks, block_size, hash_space):
        self.block_size, self.hash_space = block_size, hash_space
        self.ref_counts = [0] * num_blocks
        self.prefixes = [None] * num_blocks  # block -> the Prefix its KV holds, or None
        self.cached = {}                     # key -> blocks holding a prefix with that key
        self.empty = deque(range(num_blocks))  # free, holding nothing worth keeping
        self.evictable = OrderedDict()       # free but still cached, least recently freed first
        self.tables = {}                     # request id -> block table

    def match(self, tokens, extra_keys):
        """Hash a prompt once: (key, own tokens) per full block, its hits, the Prefixes proved."""
        size, extra = self.block_size, tuple(extra_keys)
        chain, found, known, key = [], [], [], ROOT  # known: the Prefix of each found block
        for end in range(size, len(tokens) + 1, size):
            own = tuple(tokens[end - size:end])
            key = hash((key, own, extra)) % self.hash_space
            chain.append((key, own))
            if len(found) == len(chain) - 1:  # chained: nothing after a miss can hit
                block = self._find(key, known[-1] if known else None, own, extra)
                if block is not None:
                    found.append(block)
                    known.append(self.prefixes[block])
        return chain, found[:(len(tokens) - 1) // size], known  # the last token is computed

    def _find(self, key, parent, own, extra):
        for block in self.cached.get(key, ()):  # a key match is a hint; this is the proof:
            held = self.prefixes[block]
            if held.parent is parent and held.tokens == own and held.extra == extra:
                return block

    def lookup(self, tokens, extra_keys):
        """The cached blocks a new request with this prompt would hit; changes nothing."""
        return self.match(tokens, extra_keys)[1]

    def allocate(self, request_id, tokens, extra_keys):
        chain, hits, known = self.match(tokens, extra_keys)
        misses = -(-len(tokens) // self.block_size) - len(hits)
        revived = [b for b in hits if self.ref_counts[b] == 0]
        if misses + len(revived) > self.free_count():
            raise MemoryError(f"need {misses + len(revived)} free blocks, have {self.free_count()}")
        for block in hits:
            self.evictable.pop(block, None)
            self.ref_counts[block] += 1
        table = hits + [self._take_free() for _ in range(misses)]
        for i in range(len(hits), len(chain)):  # every full block of the prompt gets cached
            key, own = chain[i]
            if i == len(known):  # a prefix no block holds: a new Prefix under the one before
                known.append(Prefix(known[i - 1] if i else None, own, tuple(extra_keys), key))
            self.prefixes[table[i]] = known[i]  # a duplicate shares its copy's Prefix
            self.cached.setdefault(key, []).append(table[i])
        self.tables[request_id] = table
        return table, len(hits) * self.block_size

    def _take_free(self):
        if self.empty:
            block = self.empty.popleft()
        else:
            block, _ = self.evictable.popitem(last=False)  # evict the least recently freed
            key = self.prefixes[block].key
            self.cached[key].remove(block)  # this block only: a duplicate stays findable
            if not self.cached[key]:
                del self.cached[key]
            self.prefixes[block] = None
        self.ref_counts[block] = 1
        return block

    def free(self, request_id):
        for block in reversed(self.tables.pop(request_id)):  # tail first: a chain ends shorter
            self.ref_counts[block] -= 1
            if self.ref_counts[block] == 0 and self.prefixes[block] is None:
                self.empty.append(block)
            elif self.ref_counts[block] == 0:
                self.evictable[block] = None  # still cached: hittable until its memory is reused

    def block_hash(self, block):
        return getattr(self.prefixes[self._check(block)], "key", None)  # None: holds no prefix

    def refcount(self, block):
        return self.ref_counts[self._check(block)]

    def _check(self, block):
        if not 0 <= block < len(self.ref_counts):  # a negative index would answer for another
            raise ValueError(f"block {block} is out of range")
        return block

    def free_count(self):
        return len(self.empty) + len(self.evictable)
