"""A small JSON grammar as a byte-level pushdown automaton, and the token masks it induces.

Grammar (JSON without string escapes and exponents, which the answers do not need):

    value  := object | array | string | number | true | false | null      (whitespace around)
    object := '{' [ string ':' value (',' string ':' value)* ] '}'
    array  := '[' [ value (',' value)* ] ']'
    string := '"' (any byte but '"', '\\' and control bytes)* '"'
    number := '-'? ('0' | [1-9][0-9]*) ('.' [0-9]+)?

The finite control (`State`) knows where it is inside the innermost rule; the stack holds the
enclosing containers (object or array), two bits per frame in one integer. Finishing a value
"returns" to whatever container is on the stack: that is the only place the stack is read, and
the reason some tokens' validity depends on context (XGrammar's context-dependent tokens).

Three ways to get the mask of allowed next tokens, as the answers compare them:
  * `naive_mask`: walk every token of the vocabulary through the automaton from the real state;
  * `TokenMaskCache`: per (state, container) pair, precompute once which tokens are accepted or
    rejected whatever lies deeper in the stack, and keep only the *uncertain* rest to walk at
    run time (XGrammar's adaptive token mask cache, in miniature);
  * a token-level automaton (for a finite-state grammar): the cache with no uncertain tokens.
Work is counted in byte steps (one automaton transition), not timed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from solutions.decoding.vocab import Vocabulary

WHITESPACE = b" \t\n\r"
DIGITS = b"0123456789"
LITERALS = (b"true", b"false", b"null")
MAX_DEPTH = 30  # frames; two bits each in an int64
OBJECT, ARRAY = 1, 2  # frame kinds; 0 = no frame (top level)


class State(IntEnum):
    DEAD = 0
    VALUE = 1  # expecting a value
    ARRAY_OPEN = 2  # after '[': a value or ']'
    OBJECT_OPEN = 3  # after '{': a key or '}'
    KEY_START = 4  # after ',' in an object: a key
    KEY = 5  # inside a key string
    AFTER_KEY = 6  # expecting ':'
    STRING = 7  # inside a string value
    NUM_MINUS = 8
    NUM_ZERO = 9
    NUM_INT = 10
    NUM_DOT = 11
    NUM_FRAC = 12
    AFTER_VALUE_OBJECT = 13  # ',' or '}'
    AFTER_VALUE_ARRAY = 14  # ',' or ']'
    END = 15  # the document is complete: only whitespace


# literal states: (word, characters consumed so far)
_LITERAL_STATES = {(w, i): 16 + n for n, (w, i) in enumerate((w, i) for w in LITERALS for i in range(1, len(w)))}
N_STATES = 16 + len(_LITERAL_STATES)
NUMBER_FINAL = (State.NUM_ZERO, State.NUM_INT, State.NUM_FRAC)

# actions
DIE, MOVE, PUSH, POP, RETURN, RETURN_AGAIN = range(6)
# walk outcomes
LIVE, REJECTED, UNCERTAIN = 0, 1, 2


def _build_tables():
    act = np.zeros((N_STATES, 256), dtype=np.int8)
    nxt = np.zeros((N_STATES, 256), dtype=np.int16)
    kind = np.zeros((N_STATES, 256), dtype=np.int8)

    def on(state, chars, action, target=0, frame=0):
        for c in chars:
            act[state, c], nxt[state, c], kind[state, c] = action, target, frame

    def value_start(state):
        on(state, WHITESPACE, MOVE, state)
        on(state, b"{", PUSH, State.OBJECT_OPEN, OBJECT)
        on(state, b"[", PUSH, State.ARRAY_OPEN, ARRAY)
        on(state, b'"', MOVE, State.STRING)
        on(state, b"-", MOVE, State.NUM_MINUS)
        on(state, b"0", MOVE, State.NUM_ZERO)
        on(state, b"123456789", MOVE, State.NUM_INT)
        for w in LITERALS:
            on(state, w[:1], MOVE, _LITERAL_STATES[(w, 1)])

    string_body = bytes(b for b in range(256) if b >= 0x20 and b not in b'"\\')
    value_start(State.VALUE)
    value_start(State.ARRAY_OPEN)
    on(State.ARRAY_OPEN, b"]", POP)
    on(State.OBJECT_OPEN, WHITESPACE, MOVE, State.OBJECT_OPEN)
    on(State.OBJECT_OPEN, b'"', MOVE, State.KEY)
    on(State.OBJECT_OPEN, b"}", POP)
    on(State.KEY_START, WHITESPACE, MOVE, State.KEY_START)
    on(State.KEY_START, b'"', MOVE, State.KEY)
    on(State.KEY, string_body, MOVE, State.KEY)
    on(State.KEY, b'"', MOVE, State.AFTER_KEY)
    on(State.AFTER_KEY, WHITESPACE, MOVE, State.AFTER_KEY)
    on(State.AFTER_KEY, b":", MOVE, State.VALUE)
    on(State.STRING, string_body, MOVE, State.STRING)
    on(State.STRING, b'"', RETURN)
    on(State.NUM_MINUS, b"0", MOVE, State.NUM_ZERO)
    on(State.NUM_MINUS, b"123456789", MOVE, State.NUM_INT)
    on(State.NUM_ZERO, bytes(range(256)), RETURN_AGAIN)  # a number ends at the first byte that
    on(State.NUM_ZERO, b".", MOVE, State.NUM_DOT)  # cannot continue it; that byte is then read
    on(State.NUM_INT, bytes(range(256)), RETURN_AGAIN)  # again by the enclosing rule
    on(State.NUM_INT, DIGITS, MOVE, State.NUM_INT)
    on(State.NUM_INT, b".", MOVE, State.NUM_DOT)
    on(State.NUM_DOT, DIGITS, MOVE, State.NUM_FRAC)
    on(State.NUM_FRAC, bytes(range(256)), RETURN_AGAIN)
    on(State.NUM_FRAC, DIGITS, MOVE, State.NUM_FRAC)
    on(State.AFTER_VALUE_OBJECT, WHITESPACE, MOVE, State.AFTER_VALUE_OBJECT)
    on(State.AFTER_VALUE_OBJECT, b",", MOVE, State.KEY_START)
    on(State.AFTER_VALUE_OBJECT, b"}", POP)
    on(State.AFTER_VALUE_ARRAY, WHITESPACE, MOVE, State.AFTER_VALUE_ARRAY)
    on(State.AFTER_VALUE_ARRAY, b",", MOVE, State.VALUE)
    on(State.AFTER_VALUE_ARRAY, b"]", POP)
    on(State.END, WHITESPACE, MOVE, State.END)
    for (w, i), s in _LITERAL_STATES.items():
        if i + 1 < len(w):
            on(s, w[i:i + 1], MOVE, _LITERAL_STATES[(w, i + 1)])
        else:
            on(s, w[i:i + 1], RETURN)
    return act, nxt, kind


ACTION, NEXT, FRAME = _build_tables()
_AFTER_VALUE = np.array([State.END, State.AFTER_VALUE_OBJECT, State.AFTER_VALUE_ARRAY, State.DEAD], dtype=np.int16)


@dataclass(frozen=True)
class Context:
    """The automaton's full state: finite control plus the container stack."""

    state: int = State.VALUE
    stack: int = 0  # frames, two bits each, innermost in the low bits
    depth: int = 0

    @property
    def top(self) -> int:
        return self.stack & 3 if self.depth else 0

    @property
    def key(self) -> tuple[int, int]:
        """What the precomputed cache is indexed by: the state and the innermost container."""
        return (int(self.state), self.top)

    @property
    def alive(self) -> bool:
        return self.state != State.DEAD

    @property
    def may_stop(self) -> bool:
        """May the document end here (end-of-sequence allowed)?"""
        return self.state == State.END or (self.depth == 0 and self.state in NUMBER_FINAL)


DEAD_CONTEXT = Context(State.DEAD, 0, 0)


def advance(ctx: Context, data: bytes) -> Context:
    """Feed `data` to the automaton byte by byte; a context whose state is DEAD on rejection.
    The scalar reference the vectorised walk is tested against."""
    if not isinstance(data, (bytes, bytearray)):
        raise ValueError(f"advance needs bytes, got {type(data).__name__}")
    state, stack, depth = int(ctx.state), ctx.stack, ctx.depth

    def returned(stack, depth):
        return int(_AFTER_VALUE[stack & 3 if depth else 0])

    for b in data:
        if state == State.DEAD:
            return DEAD_CONTEXT
        for _ in range(2):  # at most one re-read: a number ends, then its container reads the byte
            a = ACTION[state, b]
            if a == MOVE:
                state = int(NEXT[state, b])
            elif a == PUSH:
                if depth == MAX_DEPTH:
                    return DEAD_CONTEXT
                stack, depth, state = stack * 4 + int(FRAME[state, b]), depth + 1, int(NEXT[state, b])
            elif a == POP:
                stack, depth = stack >> 2, depth - 1
                state = returned(stack, depth)
            elif a == RETURN:
                state = returned(stack, depth)
            elif a == RETURN_AGAIN:
                state = returned(stack, depth)
                continue
            else:
                return DEAD_CONTEXT
            break
    return Context(state, stack, depth) if state != State.DEAD else DEAD_CONTEXT


def accepts(text: str) -> bool:
    """Is `text` a complete document of the grammar?"""
    return advance(Context(), text.encode()).may_stop


@dataclass
class Walk:
    """The outcome of walking tokens from one context: per token, LIVE / REJECTED / UNCERTAIN,
    and the byte steps it took (the work)."""

    ids: np.ndarray
    status: np.ndarray
    steps: np.ndarray

    @property
    def total_steps(self) -> int:
        return int(self.steps.sum())


def walk(vocab: Vocabulary, ctx: Context, ids: np.ndarray | None = None, known_floor: bool = True) -> Walk:
    """Walk tokens `ids` (default: all BPE tokens) from `ctx`, all at once with numpy.

    known_floor=True: `ctx.stack` is the whole stack (a real request). False: only the innermost
    frame is known; a token that finishes that container and needs the one below is UNCERTAIN
    (how the cache is precomputed). A token's steps are the bytes read up to and including the one
    that decided it (all of them if it stays LIVE)."""
    ids = np.arange(vocab.n_bpe) if ids is None else np.asarray(ids, dtype=np.int64)
    n = ids.size
    st = np.full(n, int(ctx.state), dtype=np.int16)
    stack = np.full(n, ctx.stack, dtype=np.int64)
    depth = np.full(n, ctx.depth, dtype=np.int64)
    status = np.full(n, LIVE if ctx.alive else REJECTED, dtype=np.int8)
    lengths = vocab.lengths[ids]
    steps = np.where(status == LIVE, lengths, 0)
    now = 0  # the byte position being read

    def stop(p, outcome):
        status[p] = outcome
        steps[p] = now + 1

    def finish(r):  # a value ended: go to what the container (or the top level) expects next
        d = depth[r]
        empty = d == 0
        if empty.any() and not known_floor:
            stop(r[empty], UNCERTAIN)
        st[r] = _AFTER_VALUE[np.where(empty, 0, stack[r] & 3)]

    def dispatch(r, b):
        s = st[r]
        a = ACTION[s, b]
        present = np.bincount(a, minlength=6)
        if present[MOVE]:
            m = a == MOVE
            st[r[m]] = NEXT[s[m], b[m]]
        if present[PUSH]:
            m = a == PUSH
            p = r[m]
            stack[p] = stack[p] * 4 + FRAME[s[m], b[m]]
            depth[p] += 1
            st[p] = NEXT[s[m], b[m]]
            deep = p[depth[p] > MAX_DEPTH]
            if deep.size:
                stop(deep, REJECTED)
        if present[POP]:
            p = r[a == POP]
            stack[p] >>= 2
            depth[p] -= 1
            finish(p)
        if present[RETURN]:
            finish(r[a == RETURN])
        if present[DIE]:
            stop(r[a == DIE], REJECTED)
        if present[RETURN_AGAIN]:
            m = a == RETURN_AGAIN
            return r[m], b[m]
        return None, None

    order = np.argsort(-lengths, kind="stable")  # longest first: tokens still long enough are a prefix
    active = order[status[order] == LIVE]
    for now in range(vocab.columns.shape[0] if n else 0):
        if now:
            active = active[:np.searchsorted(-lengths[active], -now, side="left")]
            active = active[status[active] == LIVE]
        if active.size == 0:
            break
        b = vocab.columns[now, ids[active]]
        again, b2 = dispatch(active, b)
        if again is not None:
            finish(again)
            keep = status[again] == LIVE
            left, _ = dispatch(again[keep], b2[keep])
            assert left is None, "a byte is re-read at most once"
    return Walk(ids, status, steps)


# ---- what a mask costs ---------------------------------------------------------------------------
# Assumptions, not measurements (the answers state them and show the sensitivity):
BYTE_STEP_S = 20e-9  # one automaton transition in compiled code: a table lookup, a stack check and
#                      a data-dependent branch that often mispredicts, ~60 cycles at ~3 GHz
COPY_BYTES_PER_S = 10e9  # one core copying a cached mask that sits in L2 (a conservative memcpy rate)


@dataclass(frozen=True)
class MaskWork:
    """The work of one mask: automaton byte steps and 32-bit words copied from a cache."""

    byte_steps: int
    words_copied: int = 0

    @property
    def seconds(self) -> float:
        return self.byte_steps * BYTE_STEP_S + 4 * self.words_copied / COPY_BYTES_PER_S


def naive_mask(vocab: Vocabulary, ctx: Context) -> tuple[np.ndarray, MaskWork]:
    """Allowed-token mask over `vocab.size` ids by walking every token; and the work."""
    w = walk(vocab, ctx)
    mask = np.zeros(vocab.size, dtype=bool)
    mask[w.ids[w.status == LIVE]] = True
    mask[vocab.eos_id] = ctx.may_stop
    return mask, MaskWork(w.total_steps)


@dataclass
class CacheEntry:
    accepted: np.ndarray  # bool over the BPE ids: valid whatever the stack below holds
    uncertain: np.ndarray  # ids to walk at run time with the real stack
    compile_steps: int


@dataclass
class TokenMaskCache:
    """Per (state, innermost container): accepted / rejected / uncertain tokens, computed once
    (at grammar compile time); at run time only the uncertain ones are walked."""

    vocab: Vocabulary
    entries: dict = field(default_factory=dict)

    def entry(self, key: tuple[int, int]) -> CacheEntry:
        if key not in self.entries:
            state, top = key
            local = Context(state, top, 1) if top else Context(state, 0, 0)
            w = walk(self.vocab, local, known_floor=not top)
            self.entries[key] = CacheEntry(w.status == LIVE, w.ids[w.status == UNCERTAIN], w.total_steps)
        return self.entries[key]

    def compile(self, keys) -> int:
        """Precompute `keys`; the byte steps it cost."""
        return sum(self.entry(k).compile_steps for k in keys)

    def mask(self, ctx: Context) -> tuple[np.ndarray, MaskWork]:
        """The same mask as `naive_mask`; work = words copied from the cache + uncertain steps."""
        e = self.entry(ctx.key)
        mask = np.zeros(self.vocab.size, dtype=bool)
        mask[: self.vocab.n_bpe] = e.accepted
        w = walk(self.vocab, ctx, e.uncertain)
        mask[w.ids[w.status == LIVE]] = True
        mask[self.vocab.eos_id] = ctx.may_stop
        return mask, MaskWork(w.total_steps, bitmask_words(self.vocab.size))


def reachable_keys() -> list[tuple[int, int]]:
    """Every (state, innermost container) pair a document can be in."""
    object_only = (State.OBJECT_OPEN, State.KEY_START, State.KEY, State.AFTER_KEY, State.AFTER_VALUE_OBJECT)
    array_only = (State.ARRAY_OPEN, State.AFTER_VALUE_ARRAY)
    anywhere = (State.VALUE, State.STRING, State.NUM_MINUS, *NUMBER_FINAL, State.NUM_DOT,
                *_LITERAL_STATES.values())
    keys = [(int(s), OBJECT) for s in object_only] + [(int(s), ARRAY) for s in array_only]
    keys += [(int(s), top) for s in anywhere for top in (0, OBJECT, ARRAY)]
    return keys + [(int(State.END), 0)]


# ---- the bitmask the sampler receives ----------------------------------------------------------
def bitmask_words(vocab_size: int) -> int:
    """32-bit words per request per step: ceil(V / 32), as xgrammar.allocate_token_bitmask."""
    if vocab_size < 1:
        raise ValueError(f"vocab_size must be positive, got {vocab_size}")
    return -(-vocab_size // 32)


def bitmask_bytes(vocab_size: int) -> int:
    return 4 * bitmask_words(vocab_size)


def pack_bitmask(mask: np.ndarray) -> np.ndarray:
    """Bool mask -> int32 words, bit i of word i // 32 set if token i is allowed (little-endian
    bit order, as xgrammar's bitmask and vLLM's apply_grammar_bitmask read it)."""
    words = bitmask_words(mask.size)
    padded = np.zeros(words * 32, dtype=bool)
    padded[: mask.size] = mask
    return np.packbits(padded.reshape(words, 32), axis=1, bitorder="little").view("<u4").ravel().view(np.int32)


def unpack_bitmask(words: np.ndarray, vocab_size: int) -> np.ndarray:
    bits = np.unpackbits(np.asarray(words, dtype=np.int32).view(np.uint8), bitorder="little")
    return bits[:vocab_size].astype(bool)
