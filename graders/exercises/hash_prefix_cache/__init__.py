"""q47 hash-chained prefix cache: vLLM v1's automatic prefix caching over a block pool.

The oracle knows what every physical block holds: the extra keys and the token prefix its KV
was computed from (None when it holds no full block). Every hit the candidate returns is
checked against that, so a hit that would serve KV of other tokens, another prefix or another
adapter fails whatever the candidate's hash said. The block hash is the candidate's key, and
is compared only for identity: equal prefixes (and extra keys) must give equal keys, different
ones different keys, wherever the candidate folds its extra keys (vLLM folds the cache salt
into the first block only). `collisions` is graded where hashes collide: a hash_space of 1 to
3 values, or 2**64 with tokens -1 and -2 (CPython's hash(-1) == hash(-2), so a key built
with the built-in hash collides however wide the space); every other property runs with
2**64 and tokens 0 and 1, where a collision is not expected.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from graders.exercise import Exercise, GradedMachine, Method, Property, Step

CHAINING = "chaining"
EXTRA_KEYS = "extra-keys"
REVIVAL = "revival"
EVICTION = "eviction-order"
CONSERVATION = "conservation"
STALE = "no-stale-entry"
DUPLICATES = "duplicates"
COLLISIONS = "collisions"
LAST_TOKEN = "last-token"

ROOT = -1                # parent hash of a prompt's first block
WIDE = 1 << 64           # a 64-bit hash space: collisions never happen in a test run
NARROW = (1, 2, 3)       # collisions everywhere (1: a constant hash); `collisions` only
TOKENS = (0, 1)          # a small alphabet: shared prefixes come early
CLASHING = (-1, -2)      # hash(-1) == hash(-2): a built-in hash collides in any space
EXTRA_CHOICES = ((), (), (7,), (7, 1))  # no extra keys, a LoRA id, a LoRA id and a salt

SPEC = """\
vLLM's automatic prefix caching keeps the KV of finished prompts in the block pool and
hands it to later requests that start the same way. A prompt is cut into blocks of
block_size tokens; a *full* block i is known by a chained hash, for example

    h(i) = hash((h(i-1), tuple(its tokens), tuple(extra_keys))) % hash_space,  h(-1) = -1

with Python's built-in hash (for a tuple of ints it is the same in every process). So block
3 of two prompts can only share a hash if blocks 0-2 match too. extra_keys is a list of ints
(a LoRA adapter id, a cache salt) and is part of every block's identity. The function is
yours: the grader compares keys only with each other, never with a value of its own. A key
is an int in 0 .. hash_space-1; the same extra keys and tokens 0 .. end of the block always
give the same key; with hash_space = 2**64 and tokens 0 and 1 (no collision expected), a
different prefix or different extra keys give a different key. Fold the extra keys into
every block, or into the first block only (vLLM folds the cache salt there; the chain
carries it on): both pass. Write one class, PrefixCache, about seventy lines of plain Python.

  allocate(request_id, tokens, extra_keys) -> (block_table, num_cached_tokens)
      A new request. Match its full blocks from the first, stopping at the first miss. At
      least the last prompt token is always computed and hits are whole blocks, so a prompt
      of n tokens hits at most (n - 1) // block_size blocks. A hit takes a reference on the
      cached block; a cached block that was free comes back out of the free pool (revived,
      not recomputed). Every other block of the prompt gets a fresh block from the free pool:
      first any free block that holds nothing, then cached free blocks, least recently freed
      first (that block's old identity is lost). The prompt's KV is computed in this step,
      so on return every full block of it is cached, even when another block already holds
      the same prefix (duplicates are legal); a partial last block is not cached. If the
      free pool cannot supply the fresh blocks plus the revived hits, raise MemoryError and
      change nothing. Return the block table (the hits, then the fresh blocks: one block per
      block of the prompt) and the prompt tokens served from cache (hits x block_size).
  lookup(tokens, extra_keys) -> list of blocks
                      the cached blocks a new request with this prompt would hit now, first
                      block first (the same match allocate makes); changes nothing. The
                      grader calls it after every call, on every prefix ever cached.
  free(request_id)    the request finished: drop its references, tail block first. A block
                      whose last reference goes joins the free pool and stays cached (still
                      hittable) until its memory is taken for something else.
  block_hash(block)   the key of the full prefix the block holds, or None (empty, partial,
                      reused); ValueError if block is not in 0 .. num_blocks-1.
  refcount(block)     running requests whose table holds the block; ValueError if out of range.
  free_count()        blocks no running request holds, cached or not.

To grade `collisions` the grader makes different prefixes share a key all the time: it sets
hash_space to 1, 2 or 3, or keeps 2**64 and sends tokens -1 and -2 (in CPython hash(-1) ==
hash(-2), so any key built with the built-in hash collides, however wide the space; a token
may be any int). A hit must still serve only KV computed from the same extra keys and the
same tokens 0 .. end of the block (a hash match is a hint, not a proof), and a collision
must not hide a block that does hold the prefix: verify every hit, whatever hash_space is.
Request ids are ints the grader never reuses while running; tokens is a non-empty list of
ints. The grader never reads an argument after the call, but do not keep the caller's lists
(copy what you store). Return ints, None, lists or tuples: they are compared by type and
value.

What real engines skip. vLLM v1 trusts the hash (SHA-256 by default) and never compares
tokens on a hit. A cache that works the way its BlockPool does since vLLM PR 42656 (merged:
blocks without a hash go to the front of the free queue, cached ones to the back; mutant
trusts_hash_like_vllm) passes every property here except `collisions`, which vLLM skips by
design. Before that PR, vLLM v1 kept one LRU free queue for every freed block and also
fails `eviction-order` (the mutant one_free_queue). nano-vllm's BlockManager behind this interface (tests/graders/
prefix_cache_nano_vllm_style.py) compares only the hit block's own tokens (fails
`collisions`), keeps one block per hash (fails `duplicates`) and keeps one FIFO free list
for empty and cached blocks alike (fails `eviction-order`).

How the interface maps onto vLLM v1 (vllm/v1/core):
  lookup    = KVCacheManager.get_computed_blocks (read-only)
  allocate  = KVCacheManager.get_computed_blocks (find_longest_cache_hit over
              request.block_hashes, capped at num_tokens - 1) + allocate_slots (BlockPool.touch
              the hits, get_new_blocks, which evicts via _maybe_evict_cached_block) +
              BlockPool.cache_full_blocks
  free      = KVCacheManager.free: the request's blocks reversed into BlockPool.free_blocks
  block_hash, refcount, free_count = KVCacheBlock.block_hash, .ref_cnt,
              BlockPool.get_num_free_blocks()
  the hash  = hash_block_tokens with caching_hash_fn = lambda key: hash(key) % hash_space and
              NONE_HASH = -1; generate_block_hash_extra_keys puts the LoRA id in every
              block's extra keys and the cache salt in the first block's only
"""

METHODS = (
    Method("__init__", ("num_blocks", "block_size", "hash_space"),
           "blocks 0..num_blocks-1 start free and empty; hashes are taken % hash_space"),
    Method("allocate", ("request_id", "tokens", "extra_keys"),
           "match full blocks from the first (at most (n-1)//block_size), fresh blocks for "
           "the rest, cache every full block; MemoryError (no change) if the free pool is short",
           "tuple[list[int], int]"),
    Method("lookup", ("tokens", "extra_keys"), "the blocks a new request with this prompt "
           "would hit now (the match allocate makes); changes nothing", "list[int]"),
    Method("free", ("request_id",), "drop the request's references, tail first; freed blocks "
           "stay cached until reused"),
    Method("block_hash", ("block",), "key of the full prefix the block holds (an int in "
           "0..hash_space-1, equal for equal prefixes, different for different ones), or None",
           "int | None"),
    Method("refcount", ("block",), "running requests holding the block", "int"),
    Method("free_count", (), "blocks no running request holds", "int"),
)

PROPERTIES = (
    Property(CHAINING, "block_hash is a key in 0..hash_space-1, equal for equal prefixes and "
             "(no collision expected) different for different ones; a hit at block i serves KV "
             "of this request's tokens 0..i, never the same tokens after another prefix; "
             "matching stops only where the cache has no block"),
    Property(EXTRA_KEYS, "requests whose extra keys differ never share a block or a key, even "
             "with equal tokens"),
    Property(REVIVAL, "a freed block keeps its identity until reused: hit again it counts as "
              "cached (no recompute), keeps its hash, has one reference and leaves the free "
              "pool exactly once"),
    Property(EVICTION, "fresh blocks come from empty free blocks first, then from cached free "
             "blocks least recently freed first; a request's blocks are freed tail first"),
    Property(CONSERVATION, "free_count() counts the blocks no running request holds and "
             "refcount(b) the requests holding b; a fresh block was free; MemoryError exactly "
             "when the free pool cannot cover the misses and revivals, and then no change"),
    Property(STALE, "once a block's memory is reused, its old prefix never hits it and its "
             "hash is the new content's (or None)"),
    Property(DUPLICATES, "two blocks may hold the same prefix; each stays findable while it "
             "holds it, and reusing one leaves the other hittable"),
    Property(COLLISIONS, "where keys collide (hash_space 1 to 3, or tokens -1 and -2), equal "
             "keys never serve another prefix's KV and never hide a block that holds the prefix"),
    Property(LAST_TOKEN, "at least one prompt token is computed: a prompt of n tokens hits at "
             "most (n-1)//block_size whole blocks"),
)


def chain_hashes(tokens, extra, block_size, hash_space, root=ROOT) -> list[int]:
    """The spec's example hash of every full block of `tokens` (the reference's; the grader
    itself never computes a key, it compares the candidate's)."""
    out, parent = [], root
    for end in range(block_size, len(tokens) + 1, block_size):
        parent = hash((parent, tuple(tokens[end - block_size:end]), tuple(extra))) % hash_space
        out.append(parent)
    return out


def _show(identity) -> str:
    if identity is None:
        return "nothing (empty or a partial block)"
    extra, tokens = identity
    return f"tokens {list(tokens)}" + (f" with extra keys {list(extra)}" if extra else "")


class CacheMachine(GradedMachine):
    """Drives a candidate PrefixCache; `holds` (block -> (extra, token prefix)) is the oracle."""

    def __init__(self):
        super().__init__()
        self.total = 0
        self.refs: list[int] = []
        self.holds: list = []        # block -> (extra keys, tokens 0..end) or None
        self.history: list[set] = []  # block -> every identity it ever held
        self.revived: set[int] = set()  # blocks hit while free, since they got their identity
        self.duplicated: set = set()    # identities two blocks held at once
        self.chains: list = []          # every identity ever cached that no later one extends
        self.probed: list = []          # the chains the last reads looked up
        self.lru: list[int] = []        # free cached blocks, least recently freed first
        self.running: dict[int, list[int]] = {}
        self.prompts: list[tuple[list[int], tuple]] = []
        self.next_id = 0
        self.keys: dict = {}       # identity -> the key the candidate reported for it
        self.owner: dict = {}      # key -> the identity it was reported for (no collisions)

    # the oracle's view ---------------------------------------------------------------------

    def holders(self, identity) -> list[int]:
        return [b for b in range(self.total) if self.holds[b] == identity]

    def free_blocks(self) -> list[int]:
        return [b for b in range(self.total) if not self.refs[b]]

    @initialize(num_blocks=st.integers(2, 6), block_size=st.sampled_from([2, 1, 3]),
                data=st.data())
    def create(self, num_blocks, block_size, data):
        """`collisions` is graded where keys collide: a hash space of 1-3 values, or 64 bits
        with tokens -1 and -2; every other property in 64 bits with tokens 0 and 1, where a
        wrong hit or a shared key has only one cause."""
        self.narrow = self.focus == COLLISIONS   # keys collide: only a prefix check saves a hit
        hash_space = (data.draw(st.sampled_from(NARROW + (WIDE,)), label="hash_space")
                      if self.narrow else WIDE)
        self.alphabet = CLASHING if self.narrow and hash_space == WIDE else TOKENS
        self.total, self.block_size, self.hash_space = num_blocks, block_size, hash_space
        self.refs = [0] * num_blocks
        self.holds = [None] * num_blocks
        self.history = [set() for _ in range(num_blocks)]
        self.construct(num_blocks, block_size, hash_space)
        self.check_state(self.query(self.reads()))

    def reads(self) -> list[tuple[str, tuple]]:
        """The pool's whole observable state, checked after every action: counts, hashes, and
        a lookup of every chain cached before the action (one token longer, so every block
        may hit)."""
        self.probed = list(self.chains)
        return ([("free_count", ())] +
                [(m, (b,)) for b in range(self.total) for m in ("refcount", "block_hash")] +
                [("lookup", (list(tokens) + [0], list(extra))) for extra, tokens in self.probed] +
                [("refcount", (-1,)), ("block_hash", (self.total,))])  # out of range

    def act(self, method: str, *args):
        """One round trip: the action, then every read of the state after it."""
        steps = [Step(method, args)] + [Step(m, a, query=True) for m, a in self.reads()]
        self.transcript.steps.extend(steps)
        replies = self.sandbox.call_many([(s.method, list(s.args)) for s in steps])
        for step, reply in zip(steps, replies):
            step.reply = reply
        return replies[0], replies[1:]

    def draw_prompt(self, data, again=False):
        """A new prompt, or one of the last few prompts repeated, extended (a chat's next
        turn: most of it kept, new tokens after) or cut at a block boundary (fully cached:
        the last-token rule recomputes its last block, making a duplicate). Repeats and
        shared prefixes are where a prefix cache goes wrong."""
        kind = (data.draw(st.integers(1 if again else 0, 3), label="kind") if self.prompts
                else 0)
        if not kind:
            base, extra = [], None
        else:
            earlier, extra = data.draw(st.sampled_from(self.prompts[-4:]), label="earlier")
            if kind == 1:
                return list(earlier), extra
            if kind == 3 and len(earlier) >= self.block_size:
                blocks = data.draw(st.integers(1, len(earlier) // self.block_size), label="blocks")
                return list(earlier[:blocks * self.block_size]), extra
            cut = data.draw(st.integers(0, len(earlier)), label="tokens dropped")
            base = earlier[:len(earlier) - cut]
        room = max(min(self.total * self.block_size + 1 - len(base), 2 * self.block_size + 1),
                   0 if base else 1)
        size = data.draw(st.integers(0 if base else 1, room), label="new tokens")
        tail = data.draw(st.lists(st.sampled_from(self.alphabet), min_size=size, max_size=size),
                         label="tail")
        if extra is None or data.draw(st.booleans(), label="new extra keys?"):
            extra = data.draw(st.sampled_from(EXTRA_CHOICES), label="extra")
        return base + tail, extra

    # rules ---------------------------------------------------------------------------------
    @rule(data=st.data())
    def allocate(self, data):
        self.admit(*self.draw_prompt(data))

    @precondition(lambda self: self.prompts)
    @rule(data=st.data())
    def allocate_again(self, data):
        """A prompt that repeats, extends or cuts a recent one: the cache's whole point."""
        self.admit(*self.draw_prompt(data, again=True))

    def admit(self, tokens, extra):
        rid, self.next_id = self.next_id, self.next_id + 1
        size, n = self.block_size, len(tokens)
        blocks = -(-n // size)
        ids, k = self.expected_hits(tokens, extra)
        free = self.free_blocks()
        revive_min = sum(all(not self.refs[b] for b in self.holders(ids[i])) for i in range(k))
        revive_max = sum(any(not self.refs[b] for b in self.holders(ids[i])) for i in range(k))
        fresh = blocks - k
        what = f"allocate({rid}, {tokens}, {list(extra)})"
        reply, state = self.act("allocate", rid, tokens, list(extra))
        self.prompts.append((tokens, extra))
        if reply.raised_builtin("MemoryError"):
            self.check(CONSERVATION, len(free) < fresh + revive_max,
                       f"{what} raised MemoryError, but {len(free)} block(s) are free and it "
                       f"needs {fresh} fresh block(s) plus {revive_min} revived hit(s)")
            self.check_state(state)
            return
        value = reply.value
        shaped = (reply.raised is None and type(value) is list and len(value) == 2
                  and type(value[0]) is list and all(type(b) is int for b in value[0])
                  and type(value[1]) is int)
        got = reply.show() if reply.raised else "returned " + reply.show()
        self.check(CONSERVATION, shaped, f"{what} {got}, expected (block_table, num_cached_tokens)")
        table, cached = value
        self.check(CONSERVATION, len(table) == blocks and all(0 <= b < self.total for b in table),
                   f"{what} returned table {table}: expected {blocks} block(s) in "
                   f"0..{self.total - 1}, one per block of the prompt")
        self.check(LAST_TOKEN, 0 <= cached <= n and cached % size == 0,
                   f"{what} reports {cached} cached tokens: hits are whole blocks of {size}")
        hits = cached // size
        self.check_match(what, tokens, table[:hits], ids, k)
        self.check(CONSERVATION, len(free) >= fresh + revive_min,
                   f"{what} returned {value!r}, but only {len(free)} block(s) are free and it "
                   f"needs {fresh} fresh block(s) plus {revive_min} revived hit(s): "
                   "expected MemoryError")
        self.check(CONSERVATION, len(set(table)) == blocks,
                   f"{what} returned table {table}: it lists a block twice")
        self.check_fresh(what, table[:hits], table[hits:])
        revived = self.commit(rid, table, hits, ids)
        self.check_revived(revived, state)
        self.check_state(state)

    def expected_hits(self, tokens, extra):
        """The identity of every full block, and how many a correct cache hits right now."""
        size = self.block_size
        ids = [(extra, tuple(tokens[:end])) for end in range(size, len(tokens) + 1, size)]
        cap, k = (len(tokens) - 1) // size, 0
        while k < cap and self.holders(ids[k]):
            k += 1
        return ids, k

    def check_match(self, what, tokens, hits, ids, k):
        """Hits must hold this very prefix (wrong KV first: it explains any other symptom),
        leave the last token to compute, and reach as far as the cache holds the chain."""
        cap = (len(tokens) - 1) // self.block_size
        for i in range(min(len(hits), cap)):
            self.check_hit(what, i, ids[i], hits[i])
        self.check(LAST_TOKEN, len(hits) <= cap,
                   f"{what} hit {len(hits)} block(s) of a {len(tokens)}-token prompt: at least "
                   f"the last token must be computed, so at most {cap} block(s) of "
                   f"{self.block_size} may hit")
        if len(hits) < k:
            self.missed(what, len(hits), ids[len(hits)])

    def check_lookups(self, replies):
        for (extra, tokens), reply in zip(self.probed, replies):
            probe = list(tokens) + [0]
            what = f"lookup({probe}, {list(extra)})"
            shaped = (reply.raised is None and type(reply.value) is list
                      and all(type(b) is int and 0 <= b < self.total for b in reply.value))
            shown = reply.show() if reply.raised else "returned " + reply.show()
            self.check(CHAINING, shaped, f"{what} {shown}, expected a list of blocks")
            self.check_match(what, probe, reply.value, *self.expected_hits(probe, extra))

    def check_hit(self, what, i, identity, block):
        """A hit at block i must hold exactly this request's prefix through block i."""
        held = self.holds[block]
        if held == identity:
            return
        if self.narrow:
            prop = COLLISIONS  # only a check of the prefix could have refused it
        elif held is None:
            prop = STALE if identity in self.history[block] else CHAINING
        elif (held[0], held[1][-self.block_size:]) == (identity[0], identity[1][-self.block_size:]):
            prop = CHAINING  # the same block of tokens after another prefix
        elif identity in self.history[block]:
            prop = STALE
        elif held[1] == identity[1]:
            prop = EXTRA_KEYS
        else:
            prop = CHAINING
        past = (" (it held that prefix before its memory was reused)"
                if identity in self.history[block] else "")
        key = self.keys.get(identity)
        collide = (f"; both have key {key} (hash_space {self.hash_space})"
                   if held is not None and key is not None and self.keys.get(held) == key
                   else "")
        self.check(prop, False, f"{what} hit block {block} for block {i}, which needs KV of "
                   f"{_show(identity)}, but block {block} holds {_show(held)}{past}{collide}: "
                   "wrong KV served")

    def missed(self, what, i, identity):
        """The cache holds this prefix, yet the candidate stopped matching before it."""
        holders = self.holders(identity)
        if self.narrow:
            prop, why = COLLISIONS, "a prefix with the same hash must not hide it"
        elif identity in self.duplicated:
            prop, why = DUPLICATES, "another copy of it was reused, but this copy still holds it"
        elif all(not self.refs[b] for b in holders):
            prop, why = REVIVAL, "freed blocks stay cached until their memory is reused"
        else:
            prop, why = CHAINING, "a hit chain stops only where the cache has no block"
        self.check(prop, False, f"{what} hit only {i} block(s), but block {i} ({_show(identity)}) "
                   f"is cached in block(s) {holders} ({why})")

    def check_fresh(self, what, hits, fresh):
        taken = set(fresh)
        self.check(CONSERVATION, all(not self.refs[b] for b in taken),
                   f"{what} handed out block(s) {sorted(b for b in taken if self.refs[b])} as "
                   "fresh, but running requests hold them")
        empty = {b for b in self.free_blocks() if self.holds[b] is None}
        cached = [b for b in self.lru if b not in hits]
        if len(taken) <= len(empty):
            ok = taken <= empty
            expected = f"any {len(taken)} of the empty free blocks {sorted(empty)}"
        else:
            evict = cached[:len(taken) - len(empty)]
            ok = taken == empty | set(evict)
            expected = (f"the empty free blocks {sorted(empty)}, then the least recently freed "
                        f"cached block(s) {evict} (free order {cached})")
        self.check(EVICTION, ok, f"{what} took fresh block(s) {fresh}; expected {expected}")

    def commit(self, rid, table, hits, ids):
        revived = [b for b in table[:hits] if not self.refs[b]]
        for block in table[:hits]:
            if block in revived:
                self.lru.remove(block)
                self.revived.add(block)
            self.refs[block] += 1
        for i, block in enumerate(table[hits:], start=hits):
            if block in self.lru:
                self.lru.remove(block)
            self.revived.discard(block)
            self.refs[block] = 1
            identity = ids[i] if i < len(ids) else None
            self.holds[block] = identity
            if identity is not None:
                self.history[block].add(identity)
                if len(self.holders(identity)) > 1:
                    self.duplicated.add(identity)
                self.remember(identity)
        self.running[rid] = table
        return revived

    def remember(self, identity):
        """Keep the longest chains only: a lookup of a chain checks every block before it."""
        extra, tokens = identity
        if any(e == extra and t[:len(tokens)] == tokens for e, t in self.chains):
            return
        self.chains = [(e, t) for e, t in self.chains if not (e == extra and tokens[:len(t)] == t)]
        self.chains.append(identity)

    def check_revived(self, revived, state):
        """A block hit while free: one reference, its old hash, out of the free pool once."""
        if not revived:
            return
        free = len(self.free_blocks())
        self.check(REVIVAL, state[0].value == free,
                   f"after reviving block(s) {revived}, free_count() is {state[0].show()}, "
                   f"expected {free}: each revived block leaves the free pool once")
        for block in revived:
            count, got = state[1 + 2 * block], state[2 + 2 * block]
            self.check(REVIVAL, count.value == 1,
                       f"revived block {block} has refcount {count.show()}, expected 1")
            want = self.keys.get(self.holds[block])
            self.check(REVIVAL, want is None or got.value == want,
                       f"revived block {block} reports block_hash {got.show()}, expected "
                       f"{want}: a revived block keeps its identity")

    @precondition(lambda self: self.running)
    @rule(data=st.data())
    def free(self, data):
        self.finish(data.draw(st.sampled_from(sorted(self.running)), label="request"))

    @precondition(lambda self: self.running)
    @rule()
    def free_newest(self):
        """A short request admitted last often finishes first (and a second free rule keeps
        the pool from sitting full, where every allocation is a MemoryError)."""
        self.finish(max(self.running))

    def finish(self, rid):
        reply, state = self.act("free", rid)
        self.expect_none(CONSERVATION, reply, f"free({rid})")
        for block in reversed(self.running.pop(rid)):
            self.refs[block] -= 1
            if not self.refs[block] and self.holds[block] is not None:
                self.lru.append(block)
        self.check_state(state)

    # the state after every action ---------------------------------------------------------
    def check_state(self, replies):
        free = self.expect_int(CONSERVATION, replies[0], "free_count()")
        counts = [self.expect_int(CONSERVATION, replies[1 + 2 * b], f"refcount({b})")
                  for b in range(self.total)]
        for b, count in enumerate(counts):
            self.check(CONSERVATION, count == self.refs[b],
                       f"refcount({b}) is {count}, but {self.refs[b]} running request(s) hold it")
        self.check(CONSERVATION, free == len(self.free_blocks()),
                   f"free_count() is {free}, but {len(self.free_blocks())} block(s) are held by "
                   "no running request")
        for b in range(self.total):
            self.check_hash(b, replies[2 + 2 * b])
        self.check_lookups(replies[1 + 2 * self.total:-2])
        for (method, block), reply in zip((("refcount", -1), ("block_hash", self.total)),
                                          replies[-2:]):
            self.expect_raises(CONSERVATION, reply, "ValueError",
                               f"{method}({block}) (out of range)")

    def check_hash(self, block, reply):
        """Keys compared only for identity: None for no full prefix; an int in range for one,
        the same for the same prefix every time, and (no collisions expected) never the key
        of another prefix."""
        identity = self.holds[block]
        got = reply.value
        shown = reply.show() if reply.raised else "is " + reply.show()
        old = {self.keys.get(h) for h in self.history[block] if h != identity} - {None}
        if reply.raised or not (got is None or type(got) is int):
            self.check(CHAINING, False, f"block_hash({block}) {shown}, expected an int or None")
        if identity is None:
            self.check(STALE if got in old else CHAINING, got is None,
                       f"block_hash({block}) {shown}, but block {block} holds "
                       f"{_show(identity)}: expected None"
                       + (" (that is the key of what it held before its memory was reused)"
                          if got in old else ""))
            return
        if got is None:
            prop = (REVIVAL if block in self.revived or not self.refs[block] else
                    DUPLICATES if identity in self.duplicated else CHAINING)
            self.check(prop, False, f"block_hash({block}) is None, but block {block} holds "
                       f"{_show(identity)}: expected its key")
        self.check(CHAINING, 0 <= got < self.hash_space,
                   f"block_hash({block}) is {got}, outside 0..hash_space-1 "
                   f"(hash_space {self.hash_space})")
        known = self.keys.setdefault(identity, got)
        self.check(CHAINING, got == known,
                   f"block_hash({block}) is {got}, but {_show(identity)} had key {known} "
                   "before: the same prefix must always get the same key")
        if self.narrow:
            return  # keys collide by design here; a prefix check must do the rest
        other = self.owner.setdefault(got, identity)
        if other == identity:
            return
        if got in old:
            prop = STALE
        elif other[1] == identity[1]:
            prop = EXTRA_KEYS
        else:
            prop = CHAINING
        self.check(prop, False, f"block_hash({block}) is {got}, the key of {_show(other)}, but "
                   f"block {block} holds {_show(identity)}: a different prefix (or different "
                   "extra keys) must get a different key"
                   + (" (that key is what the block held before its memory was reused)"
                      if prop == STALE else ""))

EXERCISE = Exercise(
    name="hash-prefix-cache",
    question="q47",
    title="A hash-chained prefix cache over a KV block pool",
    spec=SPEC,
    class_name="PrefixCache",
    methods=METHODS,
    properties=PROPERTIES,
    machine=CacheMachine,
    home=Path(__file__).parent,
    reference=Path(__file__).resolve().parents[3] / "solutions" / "exercises" / "hash_prefix_cache.py",
    default_examples=60,
    steps=16,
    steered=(COLLISIONS,),  # its run draws colliding keys; the others share one run
)
