"""A JSON schema compiled to a byte-level DFA, then to per-state token masks.

A schema without recursion, with its properties in a fixed order (all required, no extra keys)
and one formatting (`json.dumps`' default ", " and ": " separators), is a regular language: one
DFA over bytes recognises exactly the documents it allows. Compiling it against a vocabulary means
walking every token from every DFA state once and keeping the allowed set per state (a
token-level automaton, as Outlines does for regular expressions). Afterwards a step's mask is a
table lookup, and a state with a single way forward spells out a *forced* string that an engine
could append without running the model (jump-forward decoding).

Supported: object (properties in order), array (of one item schema), string (no escapes),
integer, number (no exponent), boolean, and `enum` of strings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solutions.decoding.vocab import Vocabulary

_STRING_BODY = bytes(b for b in range(256) if b >= 0x20 and b not in b'"\\')
_DIGITS = b"0123456789"


class _Builder:
    def __init__(self):
        self.edges: list[dict[int, int]] = [{}]  # state 0 is the dead state

    def state(self) -> int:
        self.edges.append({})
        return len(self.edges) - 1

    def connect(self, finals, entry: int) -> None:
        """Epsilon from each final state to `entry`: copy entry's outgoing edges."""
        for f in finals:
            for byte, target in self.edges[entry].items():
                if self.edges[f].get(byte, target) != target:
                    raise ValueError("schema is ambiguous at the byte level (two ways to continue)")
                self.edges[f][byte] = target

    def literal(self, text: bytes):
        entry = cur = self.state()
        for byte in text:
            nxt = self.state()
            self.edges[cur][byte] = nxt
            cur = nxt
        return entry, [cur]

    def seq(self, *fragments):
        entry, finals = fragments[0]
        for e, f in fragments[1:]:
            self.connect(finals, e)
            finals = f
        return entry, finals

    def choice(self, words: list[bytes]):
        """A trie of alternatives (for enums and booleans)."""
        entry = self.state()
        finals = []
        for word in words:
            cur = entry
            for byte in word:
                cur = self.edges[cur].setdefault(byte, self.state())
            finals.append(cur)
        return entry, finals

    def string(self):
        entry, inside, end = self.state(), self.state(), self.state()
        self.edges[entry][ord('"')] = inside
        for byte in _STRING_BODY:
            self.edges[inside][byte] = inside
        self.edges[inside][ord('"')] = end
        return entry, [end]

    def number(self, integer: bool):
        entry, minus, zero, digits, dot, frac = (self.state() for _ in range(6))
        self.edges[entry][ord("-")] = minus
        for s in (entry, minus):
            self.edges[s][ord("0")] = zero
            for byte in b"123456789":
                self.edges[s][byte] = digits
        for byte in _DIGITS:
            self.edges[digits][byte] = digits
        if integer:
            return entry, [zero, digits]
        for s in (zero, digits):
            self.edges[s][ord(".")] = dot
        for byte in _DIGITS:
            self.edges[dot][byte] = frac
            self.edges[frac][byte] = frac
        return entry, [zero, digits, frac]

    def value(self, schema: dict):
        if not isinstance(schema, dict):
            raise ValueError(f"a schema must be a dict, got {schema!r}")
        if "enum" in schema:
            values = schema["enum"]
            if not values or not all(isinstance(v, str) for v in values):
                raise ValueError(f"only non-empty enums of strings are supported, got {values!r}")
            return self.choice([b'"' + v.encode() + b'"' for v in values])
        kind = schema.get("type")
        if kind == "object":
            props = schema.get("properties", {})
            if not props:
                return self.literal(b"{}")
            parts, first = [], True
            for name, sub in props.items():
                parts.append(self.literal((b'{"' if first else b', "') + name.encode() + b'": '))
                parts.append(self.value(sub))
                first = False
            parts.append(self.literal(b"}"))
            return self.seq(*parts)
        if kind == "array":
            open_, close = self.literal(b"["), self.literal(b"]")
            item, sep = self.value(schema.get("items", {"type": "string"})), self.literal(b", ")
            self.connect(open_[1], item[0])
            self.connect(open_[1], close[0])  # empty array
            self.connect(item[1], sep[0])
            self.connect(item[1], close[0])
            self.connect(sep[1], item[0])
            return open_[0], close[1]
        if kind == "string":
            return self.string()
        if kind in ("integer", "number"):
            return self.number(integer=kind == "integer")
        if kind == "boolean":
            return self.choice([b"true", b"false"])
        raise ValueError(f"unsupported schema {schema!r}: use object, array, string, integer, number, "
                         "boolean or enum")


@dataclass(frozen=True)
class SchemaDFA:
    """Transition table over bytes (state 0 = dead), start state and accepting states."""

    table: np.ndarray  # (states, 256) int32
    start: int
    accepting: frozenset

    @property
    def states(self) -> int:
        """Live states (the dead state excluded)."""
        return self.table.shape[0] - 1

    def advance(self, state: int, data: bytes) -> int:
        for byte in data:
            state = int(self.table[state, byte])
            if state == 0:
                return 0
        return state

    def accepts(self, text: str) -> bool:
        return self.advance(self.start, text.encode()) in self.accepting

    def forced(self, state: int) -> bytes:
        """The bytes every continuation from `state` must start with (jump-forward string)."""
        out = bytearray()
        while state and state not in self.accepting:
            nxt = np.flatnonzero(self.table[state])
            if nxt.size != 1:
                break
            out.append(int(nxt[0]))
            state = int(self.table[state, nxt[0]])
        return bytes(out)


def compile_schema(schema: dict) -> SchemaDFA:
    """The DFA of the documents `schema` allows (json.dumps formatting), unreachable states dropped."""
    b = _Builder()
    entry, finals = b.value(schema)
    seen, order, todo = {entry}, [entry], [entry]
    while todo:
        for target in b.edges[todo.pop()].values():
            if target not in seen:
                seen.add(target)
                order.append(target)
                todo.append(target)
    index = {s: i + 1 for i, s in enumerate(order)}
    table = np.zeros((len(order) + 1, 256), dtype=np.int32)
    for s in order:
        for byte, target in b.edges[s].items():
            table[index[s], byte] = index[target]
    return SchemaDFA(table, index[entry], frozenset(index[f] for f in finals if f in index))


def token_walk(dfa: SchemaDFA, vocab: Vocabulary, state: int) -> tuple[np.ndarray, int]:
    """Where every BPE token leads from `state` (0 = rejected), and the byte steps spent."""
    n = vocab.n_bpe
    cur = np.full(n, state, dtype=np.int32)
    steps = 0
    active = np.arange(n)
    for j in range(vocab.columns.shape[0]):
        active = active[(vocab.lengths[active] > j) & (cur[active] != 0)]
        if active.size == 0:
            break
        steps += active.size
        cur[active] = dfa.table[cur[active], vocab.columns[j, active]]
    return cur, steps


def token_masks(dfa: SchemaDFA, vocab: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
    """Compile: the allowed-token mask of every state, (states + 1, n_bpe) bool, and the byte
    steps spent per state (index 0 unused). They are the steps `token_walk` takes from each
    state (what a naive engine spends per step in that state), counted without walking the states
    one by one: every token's first byte is read once per state, and only the (state, token)
    pairs that survive it walk on. Row 0 (dead) is empty."""
    n = vocab.n_bpe
    first = vocab.columns[0]
    by_first = np.argsort(first, kind="stable")
    bounds = np.searchsorted(first[by_first], np.arange(257))
    pair_state, pair_token = [], []
    for s in range(1, dfa.states + 1):
        for byte in np.flatnonzero(dfa.table[s]):
            group = by_first[bounds[byte]:bounds[byte + 1]]
            pair_state.append(np.full(group.size, s, dtype=np.int32))
            pair_token.append(group)
    state_of = np.concatenate(pair_state)
    token = np.concatenate(pair_token)
    cur = dfa.table[state_of, first[token]]
    steps = np.full(dfa.states + 1, n, dtype=np.int64)
    steps[0] = 0
    active = np.arange(token.size)
    for j in range(1, vocab.columns.shape[0]):
        active = active[(vocab.lengths[token[active]] > j) & (cur[active] != 0)]
        if active.size == 0:
            break
        steps += np.bincount(state_of[active], minlength=dfa.states + 1)
        cur[active] = dfa.table[cur[active], vocab.columns[j, token[active]]]
    masks = np.zeros((dfa.states + 1, n), dtype=bool)
    masks[state_of[cur != 0], token[cur != 0]] = True
    return masks, steps
