"""Prompt-lookup (n-gram) drafting, as vLLM's `NgramProposer` does it, and a greedy replay.

The drafter looks for the longest suffix of the context, between `min_n` and `max_n` tokens
long, that occurred earlier in the context; it proposes the (up to) `k` tokens that followed that
earlier occurrence (the earliest one, when several tie). No model, no training: a string search.

`replay` runs speculative decoding against a known greedy output: at each step the target
verifies the draft, keeps its longest correct prefix and adds one token of its own (the bonus,
or the correction). Greedy verification is lossless, so the output is the same with or without
drafts; only the number of target steps changes.
"""

from __future__ import annotations

from dataclasses import dataclass


def longest_match(context, min_n: int, max_n: int) -> tuple[int, int]:
    """(n, start): the longest suffix of `context` of length min_n..max_n that occurred earlier,
    and where its earliest earlier occurrence starts; (0, -1) when none does."""
    if not (1 <= min_n <= max_n):
        raise ValueError(f"need 1 <= min_n <= max_n, got min_n={min_n}, max_n={max_n}")
    tokens = list(context)
    total = len(tokens)
    for n in range(min(max_n, total - 1), min_n - 1, -1):
        suffix = tokens[total - n:]
        for start in range(total - n):  # earlier occurrences only (they may overlap the suffix)
            if tokens[start:start + n] == suffix:
                return n, start
    return 0, -1


def propose(context, min_n: int, max_n: int, k: int, max_model_len: int | None = None) -> list[int]:
    """Draft tokens for `context` (a sequence of token ids): the up-to-`k` tokens that followed
    the longest matching n-gram; [] when none matches."""
    if k < 1:
        raise ValueError(f"need k >= 1, got k={k}")
    tokens = list(context)
    if max_model_len is not None:
        k = min(k, max_model_len - len(tokens))
    n, start = longest_match(tokens, min_n, max_n)
    if n == 0 or k <= 0:
        return []
    return tokens[start + n:start + n + k]


@dataclass(frozen=True)
class Step:
    position: int  # output tokens already emitted before this step
    matched: int  # length of the n-gram the drafter matched (0: none, no draft)
    draft: tuple[int, ...]
    accepted: int  # draft tokens the target agreed with

    @property
    def emitted(self) -> int:
        return self.accepted + 1


@dataclass(frozen=True)
class Replay:
    steps: tuple[Step, ...]
    output_tokens: int

    @property
    def target_steps(self) -> int:
        return len(self.steps)

    @property
    def drafted(self) -> int:
        return sum(len(s.draft) for s in self.steps)

    @property
    def accepted(self) -> int:
        return sum(s.accepted for s in self.steps)

    @property
    def acceptance_rate(self) -> float:
        """Accepted / drafted tokens (vLLM's `spec_decode_num_accepted_tokens / ..._draft_tokens`)."""
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def tokens_per_step(self) -> float:
        return self.output_tokens / self.target_steps

    @property
    def draft_steps(self) -> int:
        """Steps where the drafter found a match and proposed something."""
        return sum(1 for s in self.steps if s.draft)


def replay(prompt, output, min_n: int, max_n: int, k: int) -> Replay:
    """Speculative decoding of the known greedy `output` after `prompt`, one target step at a time."""
    prompt, output = list(prompt), list(output)
    if not output:
        raise ValueError("output must contain at least one token")
    steps, pos = [], 0
    while pos < len(output):
        context = prompt + output[:pos]
        n, _ = longest_match(context, min_n, max_n)
        draft = propose(context, min_n, max_n, k)[:len(output) - pos - 1]  # nothing past the end
        accepted = 0
        while accepted < len(draft) and draft[accepted] == output[pos + accepted]:
            accepted += 1
        steps.append(Step(pos, n if draft else 0, tuple(draft), accepted))
        pos += accepted + 1
    return Replay(tuple(steps), len(output))
