"""Synthetic multi-turn chat traces, as token ids, for prefix-cache experiments.

A chat server sees each turn of a conversation as a fresh request whose prompt is the whole
conversation so far: a system prompt, then every earlier user message and answer, then the new
user message. That shape (a prefix shared by everyone, a longer one shared by one conversation,
a new tail) is what a prefix cache feeds on, so the generator keeps exactly it and nothing else.
Token ids are random, so two conversations share only what the trace says they share.

Conversations are interleaved: `concurrency` of them are open at once and each request comes
from one picked at random, which sets how much other traffic passes between two turns of one
conversation (the reuse distance an eviction policy must bridge). A trace is a function of its
spec, seed included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solutions.serving.distributions import LogNormal


@dataclass(frozen=True)
class ChatTraceSpec:
    conversations: int              # conversations in the trace
    concurrency: int = 64           # conversations open at once, interleaved at random
    system_tokens: int = 1024       # length of each system prompt
    system_prompts: int = 1         # distinct system prompts (apps or tenants); each chat picks one
    mean_turns: float = 4.0         # turns per conversation: 1 + geometric, this mean
    user_tokens: LogNormal = LogNormal(mean=70, cv=1.0)     # one user message
    answer_tokens: LogNormal = LogNormal(mean=215, cv=1.0)  # one model answer
    vocab: int = 128_000
    seed: int = 0

    def __post_init__(self):
        for name in ("conversations", "concurrency", "system_tokens", "system_prompts", "vocab"):
            value = getattr(self, name)
            if not (isinstance(value, (int, np.integer)) and value >= 1):
                raise ValueError(f"ChatTraceSpec.{name} must be an integer >= 1, got {value!r}")
        if not self.mean_turns >= 1:
            raise ValueError(f"ChatTraceSpec.mean_turns must be >= 1, got {self.mean_turns!r}")


@dataclass(frozen=True)
class Turn:
    """One request: the prompt the server receives and the answer it will generate."""

    conversation: int
    turn: int                   # 0 for the first user message
    system: int                 # which system prompt
    prompt: tuple[int, ...]     # system prompt + history + the new user message
    answer: tuple[int, ...]


def _length(dist: LogNormal, rng) -> int:
    return max(1, int(round(dist.sample(1, rng)[0])))


def chat_trace(spec: ChatTraceSpec) -> list[Turn]:
    """The trace's requests in arrival order."""
    rng = np.random.default_rng(spec.seed)
    systems = [tuple(rng.integers(0, spec.vocab, spec.system_tokens).tolist())
               for _ in range(spec.system_prompts)]
    p_end = 1 / spec.mean_turns                      # chance a turn is the conversation's last
    started, open_chats, trace = 0, [], []

    def start():
        nonlocal started
        system = int(rng.integers(spec.system_prompts))
        turns = int(rng.geometric(p_end))
        open_chats.append({"id": started, "system": system, "history": systems[system],
                           "turn": 0, "turns": turns})
        started += 1

    while started < min(spec.concurrency, spec.conversations):
        start()
    while open_chats:
        chat = open_chats[int(rng.integers(len(open_chats)))]
        user = tuple(rng.integers(0, spec.vocab, _length(spec.user_tokens, rng)).tolist())
        answer = tuple(rng.integers(0, spec.vocab, _length(spec.answer_tokens, rng)).tolist())
        prompt = chat["history"] + user
        trace.append(Turn(chat["id"], chat["turn"], chat["system"], prompt, answer))
        chat["history"], chat["turn"] = prompt + answer, chat["turn"] + 1
        if chat["turn"] == chat["turns"]:
            open_chats.remove(chat)
            if started < spec.conversations:
                start()
    return trace
