"""q45 radix prefix trie: SGLang's RadixCache over KV slots, graded against a flat model.

The machine plays the scheduler and the KV allocator: it hands out fresh slot ids, inserts
sequences (sometimes as a request that matched and locked a prefix earlier and now finishes),
matches and locks prefixes, unlocks, and evicts. Its oracle (`model.TrieModel`) is a map of
token prefixes, not a trie, so a shared misconception cannot pass both. Node handles are the
candidate's ints; the machine binds each one to the model node it must name.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from graders.exercise import Exercise, GradedMachine, Method, Property
from graders.exercises.prefix_trie.model import ModelNode, TrieModel

PLAIN = "plain-map"
SIZES = "sizes"
LOCKS = "locked-never-freed"
FREED = "slots-freed-once"
SPLIT = "split"
ENOUGH = "evict-enough"
LRU = "lru-order"

SPEC = """\
SGLang keeps its prefix cache as a radix tree over token ids. Each node owns one edge: a run
of tokens and the KV-cache slots that hold them (one slot per token). A request that shares
a prefix with an earlier one reuses those slots instead of recomputing them. Write the tree:
one class, RadixCache, about a hundred lines of plain Python.

  match_prefix(tokens)   -> (slots, node). The longest cached prefix of `tokens`: its slots,
                         and an int handle for the node where the match ends. If it ends
                         inside an edge, split the edge there first, so the node covers
                         exactly the matched tokens. Nothing matched: ([], the root's handle).
  insert(tokens, slots)  cache `tokens` whose KV is in `slots` (same length). Return how many
                         leading tokens were already cached: those keep their old slots (the
                         caller frees its duplicates); the rest become one new leaf. An edge
                         the cached prefix ends inside is split there, as in match_prefix.
  lock(node)             a running request pins its prefix: the node and every ancestor gain
                         one lock. Locking the root's handle does nothing.
  unlock(node)           drop one lock along the same path. If `node` holds no lock, raise
                         ValueError and change nothing. Unlocking the root does nothing.
  lock_ref(node)         locks through `node`: its own and those of the nodes below it.
  evictable_size()       cached tokens on no locked node.
  protected_size()       cached tokens on locked nodes.
  evict(num_tokens)      free memory: repeatedly remove the least recently used unlocked leaf
                         (its whole edge; a parent whose last child goes becomes a leaf and a
                         candidate too), until at least num_tokens are freed or no unlocked
                         leaf is left. Return the freed slots in the order freed, each leaf's
                         slots in token order.

Handles: ints of your choosing. A handle names one node until that node is evicted; when an
edge is split, the lower half keeps its handle (it still ends where it ended), so the handle
a request locked goes on covering the same tokens. The root keeps one handle forever. Once a node
is evicted its handle may name a new node (id(node) is a fine handle); the grader calls lock,
unlock and lock_ref only with handles of cached nodes, so what an evicted handle does is yours.

Recency is a logical clock, not wall time, so eviction order is exact. Keep a counter. Each
time match_prefix or insert walks into a node (from the root down), the counter goes up by
one and becomes that node's last-access time. When a walk ends inside an edge, that edge's
node is stamped, then split, and the new upper node is stamped after it. A new leaf made by
insert is stamped last. Nothing else stamps.

Values cross to the grader as plain data: return ints and lists (or tuples) of ints.

How this maps to SGLang (page_size=1), read at the pinned 0.5.23. The walk stamps each child
before splitting it (`sglang==0.5.23:sglang/srt/mem_cache/radix_cache.py`
`child.last_access_time = access_time`, before `_split_node`). match_prefix ->
match_prefix(MatchPrefixParams(key=RadixKey(tokens))), whose MatchResult has
device_prefix_len and last_device_node (the handle is TreeNode.id; the slots are
path_device_indices of that node). insert -> insert(InsertParams(key=..., value=...)), whose
InsertResult.prefix_len is the cached length; RadixCache._insert_cache then frees the caller's
duplicates, kv_indices[req.kv.cache_protected_len : result.prefix_len]. lock / unlock ->
inc_lock_ref / dec_lock_ref, which the scheduler reaches through lock(node) (it returns a
TreeLock receipt) and unlock(receipt). lock_ref -> TreeNode.lock_ref. evictable_size,
protected_size and evict keep their names; evict takes EvictParams(num_tokens) and frees
through free_segment.

The adapter below is the one that was run, on an SGLang release before 0.5.23, and it uses that
release's API: RadixCache(req_to_token_pool, allocator, page_size=1), match_prefix(tokens)
with device_indices, insert(tokens, tensor) returning the cached length, and evict(num_tokens)
freeing through the allocator's free(). At 0.5.23 the constructor takes one CacheInitParams,
and match_prefix, insert and evict take the params objects above, so it needs porting there:

    clock = itertools.count(1)
    logical = types.ModuleType("time")   # the time module with a logical monotonic(): any
    logical.__dict__.update(vars(time), monotonic=lambda: next(clock))  # other clock still works
    radix_cache.time = logical
    freed = []                     # evict() frees through the allocator; record what it frees
    pool = types.SimpleNamespace(device="cpu", free=lambda idx: freed.extend(idx.tolist()))
    tree = radix_cache.RadixCache(None, pool, page_size=1)
    nodes = {tree.root_node.id: tree.root_node}
    def match_prefix(tokens):
        m = tree.match_prefix(tokens)
        nodes[m.last_device_node.id] = m.last_device_node
        return m.device_indices.tolist(), m.last_device_node.id
    def insert(tokens, slots): return tree.insert(tokens, torch.tensor(slots))
    def lock(h): tree.inc_lock_ref(nodes[h])
    def unlock(h): tree.dec_lock_ref(nodes[h])
    def evict(n): freed.clear(); tree.evict(n); return list(freed)

What SGLang skips by design: dec_lock_ref does not refuse an unlock below zero. The
scheduler pairs every inc_lock_ref with one dec_lock_ref, so the engine trusts its caller,
and the bare adapter fails that one check of locked-never-freed; a guard in the adapter
(`if node.lock_ref == 0: raise ValueError`) restores it. SGLang stamps with time.monotonic()
(at 0.5.23 one reading per walk, which orders leaves the same way: no two leaves lie on one
walk); the adapter's counter makes that order exact, and it is the rule above. The stand-in
keeps every other function of the time module, so the adapter keeps working where evict also
reads a clock (time.perf_counter, to time itself): replacing the module by monotonic alone
crashes there. (Checked outside this repository on that earlier release, with a list-backed
stand-in for torch: the guarded adapter passed all seven properties. It was not re-run at
0.5.23.)
"""

METHODS = (
    Method("__init__", (), "an empty cache: just the root"),
    Method("match_prefix", ("tokens",), "(slots of the longest cached prefix, handle of the "
           "node it ends at); splits the edge it ends inside", "tuple[list[int], int]"),
    Method("insert", ("tokens", "slots"), "cache tokens with their slots; returns how many "
           "leading tokens were already cached (they keep their old slots)", "int"),
    Method("lock", ("node",), "+1 lock on the node and every ancestor (root: no-op)"),
    Method("unlock", ("node",), "-1 lock along the same path; ValueError if the node holds "
           "no lock (no change)"),
    Method("lock_ref", ("node",), "locks through the node", "int"),
    Method("evictable_size", (), "cached tokens on no locked node", "int"),
    Method("protected_size", (), "cached tokens on locked nodes", "int"),
    Method("evict", ("num_tokens",), "free least recently used unlocked leaves until "
           "num_tokens are freed; returns the freed slots in order", "list[int]"),
)

PROPERTIES = (
    Property(PLAIN, "the trie answers like a plain map of token sequences: match_prefix "
             "returns the slots of the longest cached prefix, insert returns how many tokens "
             "were already cached and keeps their old slots"),
    Property(SIZES, "evictable_size() + protected_size() == cached tokens, and "
             "protected_size() counts exactly the tokens on locked nodes"),
    Property(LOCKS, "a lock pins the node and every ancestor: evict never frees a locked "
             "slot, lock_ref counts the locks through a node, and unlocking a node with no "
             "lock raises ValueError and changes nothing"),
    Property(FREED, "every slot evict returns was given to insert and is still cached: no "
             "slot is freed twice, nor a slot the cache never held"),
    Property(SPLIT, "a match that ends inside an edge splits it there: the node returned "
             "covers exactly the matched tokens, keeps the lock count of the node it was "
             "split from, and sizes do not change"),
    Property(ENOUGH, "evict(n) frees at least n tokens when n are evictable, and all that is "
             "evictable otherwise"),
    Property(LRU, "evict frees whole unlocked leaves, least recently used first (a parent "
             "becomes a leaf when its last child goes), and stops once n are freed"),
)

ALPHABET = 3
TOKENS = st.integers(0, ALPHABET - 1)   # a small alphabet: shared prefixes and splits come early
MAX_LEN = 7


def _tokens(data, seen: list[tuple]) -> tuple:
    """A sequence used before, or a prefix of one plus a short tail, or a fresh one."""
    how = data.draw(st.integers(0, 3), label="how") if seen else 0
    if how == 0:
        return tuple(data.draw(st.lists(TOKENS, min_size=1, max_size=5), label="tokens"))
    base = data.draw(st.sampled_from(seen), label="base")
    if how == 1:
        return base
    cut = data.draw(st.integers(0, len(base)), label="cut")
    tail = data.draw(st.lists(TOKENS, max_size=3), label="tail")
    return tuple((list(base[:cut]) + tail)[:MAX_LEN])


def _show(tokens) -> str:
    return str(list(tokens))


class TrieMachine(GradedMachine):
    """Drives a candidate RadixCache; `model` is the oracle."""

    def __init__(self):
        super().__init__()
        self.model = TrieModel()
        self.handles: dict[int, int] = {}        # candidate handle -> model serial
        self.root_handles: set[int] = set()
        self.locks: list[tuple[int, int | None]] = []   # (handle, serial or None: root) held
        self.seen: list[tuple] = []
        self.pool: list[int] = []                # slot ids free to hand out again
        self.next_slot = 0
        self.fate: dict[int, str] = {}           # slot -> how it last left the cache
        self.split_seen: set[int] = set()        # model nodes already returned by a match

    # helpers -------------------------------------------------------------------------
    def fresh_slots(self, n: int) -> list[int]:
        out = []
        for _ in range(n):
            if self.pool:
                out.append(self.pool.pop(0))
            else:
                out.append(self.next_slot)
                self.next_slot += 1
        return out

    def node(self, handle) -> ModelNode | None:
        return self.model.by_serial.get(self.handles.get(handle))

    def live_handles(self) -> list[int]:
        """Handles of cached nodes in the order the model made their nodes: never sorted by
        value, so handles such as id(node) are driven through the same calls on replay."""
        return sorted((h for h in self.handles if self.node(h) is not None),
                      key=lambda h: self.handles[h])

    def remember(self, tokens: tuple) -> None:
        if tokens and tokens not in self.seen:
            self.seen.append(tokens)

    # rules ---------------------------------------------------------------------------
    @initialize(first=st.lists(TOKENS, min_size=1, max_size=5), running=st.booleans())
    def create(self, first, running):
        """Half the runs start with a request running on the first sequence (matched and
        locked), so splits of a locked edge and locked leaves show up early."""
        self.construct()
        first = tuple(first)
        self.put(first, self.fresh_slots(len(first)), reused=0)
        if running:
            handle, node, _ = self.matched(first)
            self.take_lock(handle, node)

    @rule(data=st.data())
    def insert(self, data):
        """Another request computed these tokens into fresh slots and caches them."""
        tokens = _tokens(data, self.seen)
        self.put(tokens, self.fresh_slots(len(tokens)), reused=0)

    def put(self, tokens: tuple, slots: list[int], reused: int) -> None:
        """insert(tokens, slots); the first `reused` slots already belong to the cache."""
        self.remember(tokens)
        what = f"insert({_show(tokens)}, {slots})"
        reply = self.call("insert", list(tokens), slots)
        cached = self.model.insert(tokens, slots)
        got = self.expect_int(PLAIN, reply, what)
        self.check(PLAIN, got == cached,
                   f"{what} returned {got}, but {cached} leading token(s) were already "
                   "cached: the caller frees its duplicate slots by this count")
        for s in slots[reused:cached]:          # the caller frees its duplicates
            self.pool.append(s)
            self.fate[s] = f"was the caller's duplicate, freed after {what}"

    def matched(self, tokens: tuple):
        """match_prefix(tokens), checked: (handle, model node or None, node split or None)."""
        what = f"match_prefix({_show(tokens)})"
        reply = self.call("match_prefix", list(tokens))
        slots, node, lower = self.model.match(tokens)
        value = reply.value
        shaped = (reply.raised is None and type(value) is list and len(value) == 2
                  and type(value[0]) is list and all(type(s) is int for s in value[0])
                  and type(value[1]) is int)
        self.check(PLAIN, shaped,
                   f"{what} {reply.show() if reply.raised else 'returned ' + reply.show()}, "
                   "expected (list of slot ints, node handle int)")
        got, handle = value
        self.check(PLAIN, got == slots,
                   f"{what} returned slots {got}, but the longest cached prefix is "
                   f"{_show(node.end if node else ())} with slots {slots}")
        self.bind(handle, node, what)
        return handle, node, lower

    @rule(data=st.data(), lock=st.booleans())
    def match(self, data, lock):
        self.match_tokens(_tokens(data, self.seen), lock)

    @precondition(lambda self: len(self.seen) > 1)
    @rule(data=st.data(), n=st.integers(1, 2))
    def refresh_then_evict(self, data, n):
        """A lookup must refresh recency as an insert does: re-read an older sequence, then
        evict a little. Four calls (insert [0], insert [1], match [0], evict 1) show a cache
        that stamps on insert only; a random walk rarely makes them in a row."""
        self.match_tokens(data.draw(st.sampled_from(self.seen[:-1]), label="older"), False)
        self.evict(n)

    @rule(data=st.data())
    def refresh_inner_then_evict(self, data):
        """A match that ends exactly at an inner node stamps it and its ancestors, not the
        nodes below it, so it is now younger than they are. When evict frees its last child
        it becomes a leaf with the newest stamp and must wait behind every older leaf, not go
        at once (freed on the spot, or queued with its child's stamp). A request caches a
        sequence below a stem and a match makes the stem a node; another request caches a
        sequence elsewhere (a leaf seen before, or a new one); a match ends exactly at the
        stem; evict frees the stem's subtree and one token more: the next to go is the leaf
        elsewhere, not the stem. A random walk rarely lines these up, as the cache seldom
        holds an unlocked inner node (review t5 found both bugs passing at seed 0)."""
        stem = _tokens(data, self.seen) or (data.draw(TOKENS, label="stem"),)
        below = stem + tuple(data.draw(st.lists(TOKENS, min_size=1, max_size=2), label="tail"))
        self.put(below, self.fresh_slots(len(below)), reused=0)
        self.match_tokens(stem, False)          # the stem ends at a node, its child below
        inner = self.model.nodes[stem]
        if inner.lock:                          # a running request holds it: nothing to see
            return
        others = [n for n in self.model.nodes.values()
                  if not n.lock and self.model.is_leaf(n) and not self.model.under(n, inner)]
        if others:
            other = data.draw(st.sampled_from(others), label="elsewhere").end
        else:                                   # a new leaf on another first token
            first = data.draw(st.sampled_from([t for t in range(ALPHABET) if t != stem[0]]),
                              label="first")
            other = (first,)
            while other in self.model.slot:
                other += (first,)
        self.put(other, self.fresh_slots(len(other)), reused=0)
        self.match_tokens(stem, False)
        order = self.model.evict_order()
        last = max(i for i, (n, _) in enumerate(order) if self.model.under(n, inner))
        self.evict(sum(k for _, k in order[:last + 1]) + 1)

    def match_tokens(self, tokens, lock):
        what = f"match_prefix({_show(tokens)})"
        handle, node, lower = self.matched(tokens)
        prefix = node.end if node else ()
        if lower is not None:
            edge = _show(lower.end[self.model.parent_len(prefix):])
            lr, ev, pr = self.query([("lock_ref", (handle,)), ("evictable_size", ()),
                                     ("protected_size", ())])
            self.check(SPLIT, lr.raised is None and lr.value == node.lock,
                       f"{what} ends inside the edge {edge}, so it splits it; lock_ref of the "
                       f"new upper node {handle} is {lr.show()}, but the {node.lock} lock(s) "
                       "on the node it was split from run through it too")
            protected = self.model.protected()
            self.check(SPLIT, ev.value == self.model.total() - protected
                       and pr.value == protected,
                       f"after {what} split the edge {edge}, evictable_size() is {ev.show()} "
                       f"and protected_size() is {pr.show()}: a split must not change them "
                       f"({self.model.total() - protected} and {protected})")
        elif node and node.serial in self.model.split_born - self.split_seen:
            # an upper half an earlier insert split off, seen for the first time
            lr = self.query([("lock_ref", (handle,))])[0]
            self.check(SPLIT, lr.raised is None and lr.value == node.lock,
                       f"{what} returned node {handle} for {_show(prefix)}, which an insert "
                       f"split off a longer edge; its lock_ref is {lr.show()}, but "
                       f"{node.lock} lock(s) run through it")
        if node:
            self.split_seen.add(node.serial)
        if lock:
            self.take_lock(handle, node)

    def bind(self, handle: int, node: ModelNode | None, what: str) -> None:
        """The handle must name the model node the match ended at, and nothing else."""
        known = self.node(handle)
        if node is None:
            self.check(SPLIT, known is None,
                       f"{what} matched nothing but returned node {handle}, the node for "
                       f"{_show(known.end if known else ())}: an empty match returns the root")
            self.root_handles.add(handle)
            return
        prefix = _show(node.end)
        self.check(SPLIT, handle not in self.root_handles,
                   f"{what} matched {prefix} but returned {handle}, the root's handle")
        if known is not None and known is not node:
            inside = len(known.end) > len(node.end) and known.end[:len(node.end)] == node.end
            self.check(SPLIT, False,
                       f"{what} matched {prefix} and returned node {handle}, but node {handle} "
                       f"already names the node for {_show(known.end)}" +
                       (": a match that ends inside an edge must split it, the head becoming a "
                        "new node with a new handle while the old handle goes on naming the "
                        "tail (which a request may have locked)" if inside else
                        ": one handle cannot name two cached nodes"))
        self.handles[handle] = node.serial

    def take_lock(self, handle: int, node: ModelNode | None) -> None:
        self.expect_none(LOCKS, self.call("lock", handle), f"lock({handle})")
        self.model.lock(node)
        self.locks.append((handle, node.serial if node else None))
        if node:    # later requests share part of a running one's prompt: split locked edges
            self.remember(node.end)

    @precondition(lambda self: self.live_handles())
    @rule(data=st.data())
    def lock_again(self, data):
        """Another request hits a node matched before (maybe split or extended since)."""
        handle = data.draw(st.sampled_from(self.live_handles()), label="node")
        self.take_lock(handle, self.node(handle))

    @precondition(lambda self: self.locks)
    @rule(data=st.data())
    def unlock(self, data):
        """A request is aborted: its lock goes, nothing is inserted."""
        handle, serial = self.locks.pop(data.draw(st.integers(0, len(self.locks) - 1),
                                                  label="which"))
        self.release(handle, serial)

    def release(self, handle: int, serial: int | None) -> None:
        self.expect_none(LOCKS, self.call("unlock", handle), f"unlock({handle})")
        self.model.lock(self.model.by_serial.get(serial), -1)

    @precondition(lambda self: self.locks)
    @rule(data=st.data())
    def finish(self, data):
        """A request finishes: it caches its prefix plus what it generated, then unlocks
        (SGLang's cache_finished_req)."""
        handle, serial = self.locks.pop(data.draw(st.integers(0, len(self.locks) - 1),
                                                  label="which"))
        node = self.model.by_serial.get(serial)
        prefix = node.end if node else ()
        tail = data.draw(st.lists(TOKENS, max_size=3), label="generated")
        own = [self.model.slot[prefix[:i]] for i in range(1, len(prefix) + 1)]
        self.put(prefix + tuple(tail), own + self.fresh_slots(len(tail)), reused=len(own))
        self.release(handle, serial)

    @precondition(lambda self: any(not self.node(h).lock for h in self.live_handles()))
    @rule(data=st.data())
    def unlock_unlocked(self, data):
        handle = data.draw(st.sampled_from([h for h in self.live_handles()
                                            if not self.node(h).lock]), label="node")
        self.expect_raises(LOCKS, self.call("unlock", handle), "ValueError",
                           f"unlock({handle}) of the node for {_show(self.node(handle).end)}, "
                           "which holds no lock,")

    @rule(n=st.integers(0, 6))
    def evict(self, n):
        what = f"evict({n})"
        reply = self.call("evict", n)
        held = dict(self.model.owner)
        locked = {s for s, p in held.items() if self.model.node_holding(p).lock}
        evictable = self.model.total() - self.model.protected()
        freed, leaves = self.model.evict(n)
        self.reach("evict: frees nothing" if not freed else
                   "evict: frees several leaves" if len(leaves) > 1 else
                   "evict: frees a leaf")
        if locked and evictable < self.model.total():
            self.reach("evict: with locked nodes")
        value = reply.value
        self.check(FREED, reply.raised is None and type(value) is list
                   and all(type(s) is int for s in value),
                   f"{what} {reply.show() if reply.raised else 'returned ' + reply.show()}, "
                   "expected a list of slot ints")
        twice = [s for s, c in Counter(value).items() if c > 1]
        self.check(FREED, not twice, f"{what} returned {value}: slot {twice[:1]} is freed twice")
        for s in value:
            self.check(FREED, s in held,
                       f"{what} freed slot {s}, which the cache does not hold: it "
                       f"{self.fate.get(s, 'was never given to insert')}")
        bad = [s for s in value if s in locked]
        self.check(LOCKS, not bad,
                   f"{what} freed slot {bad[:1]} of {_show(held[bad[0]]) if bad else ''}, "
                   "which a running request has locked")
        need = min(n, evictable)
        self.check(ENOUGH, len(value) >= need,
                   f"{what} freed {len(value)} token(s), but {evictable} were evictable: it "
                   f"must free at least {need}")
        order = ", then ".join(f"the leaf with tokens {edge} in slots {slots}"
                               for edge, slots in leaves) or "nothing"
        self.check(LRU, value == freed,
                   f"{what} returned {value}, but least recently used first it must free "
                   f"{order}: expected {freed}")
        for s in freed:
            self.pool.append(s)
            self.fate[s] = f"was already freed by an earlier {what}"

    @invariant()
    def consistent(self):
        handles = self.live_handles()
        replies = self.query([("evictable_size", ()), ("protected_size", ())] +
                             [("lock_ref", (h,)) for h in handles])
        for h, r in zip(handles, replies[2:]):      # the cause first, then the sizes
            node = self.node(h)
            self.check(LOCKS, r.raised is None and r.value == node.lock,
                       f"lock_ref({h}) is {r.show()}, but {node.lock} lock(s) run through "
                       f"the node for {_show(node.end)}")
        ev = self.expect_int(SIZES, replies[0], "evictable_size()")
        pr = self.expect_int(SIZES, replies[1], "protected_size()")
        total, protected = self.model.total(), self.model.protected()
        self.check(SIZES, ev + pr == total,
                   f"evictable_size() {ev} + protected_size() {pr} = {ev + pr}, but the "
                   f"cache holds {total} token(s)")
        self.check(SIZES, pr == protected,
                   f"protected_size() is {pr}, but {protected} cached token(s) lie on locked "
                   "nodes")


EXERCISE = Exercise(
    name="prefix-trie",
    question="q45",
    title="A radix prefix trie with locks and LRU eviction",
    spec=SPEC,
    class_name="RadixCache",
    methods=METHODS,
    properties=PROPERTIES,
    machine=TrieMachine,
    home=Path(__file__).parent,
    reference=Path(__file__).resolve().parents[3] / "solutions" / "exercises" / "prefix_trie.py",
    paths=("insert: ok", "match_prefix: ok", "lock: ok", "unlock: ok", "unlock: ValueError",
           "evict: frees nothing", "evict: frees a leaf", "evict: frees several leaves",
           "evict: with locked nodes"),
)
