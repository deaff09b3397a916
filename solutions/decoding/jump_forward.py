"""Jump-forward decoding replayed: append the grammar's forced strings without sampling them.

When the automaton allows exactly one continuation, an engine can append it at once instead of
sampling it token by token (SGLang's jump-forward with xgrammar's `find_jump_forward_string`).
The appended text is tokenized on its own, so its last token may end where the model's own
tokenization would have merged it with what comes next (` [` then `{"` instead of ` [{"`): the
model is then conditioned on a token sequence it almost never saw in training.

`replay` feeds a known answer through a schema DFA. The model is assumed to emit, at each sampled
step, the first token of the canonical tokenization of the rest of the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions.decoding.schema_automaton import SchemaDFA
from solutions.decoding.vocab import cl100k, pretokens, tokenize

MODES = ("off", "full", "hold back last piece")


@dataclass(frozen=True)
class JumpReplay:
    mode: str
    tokens: tuple[int, ...]  # the token ids the model is conditioned on, in order
    sampled: int  # steps in which the model sampled a token
    jumps: tuple[tuple[str, tuple[int, ...]], ...]  # (forced text appended, its tokens)


def replay(dfa: SchemaDFA, text: str, mode: str) -> JumpReplay:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    data = text.encode()
    if not dfa.accepts(text):
        raise ValueError("the answer does not match the schema")
    vocab = cl100k()
    pos, state, tokens, sampled, jumps = 0, dfa.start, [], 0, []
    while pos < len(data):
        forced = dfa.forced(state).decode() if mode != "off" else ""
        if forced and mode == "hold back last piece":
            forced = "".join(pretokens(forced)[:-1])  # leave the piece that may merge with what follows
        if forced:
            ids = tokenize(forced)
            tokens += ids
            jumps.append((forced, tuple(ids)))
            pos += len(forced.encode())
            state = dfa.advance(state, forced.encode())
            continue
        token = tokenize(data[pos:].decode())[0]
        tokens.append(token)
        sampled += 1
        pos += len(vocab.token_bytes[token])
        state = dfa.advance(state, vocab.token_bytes[token])
    return JumpReplay(mode, tuple(tokens), sampled, tuple(jumps))
