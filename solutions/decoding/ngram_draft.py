"""Prompt-lookup (n-gram) drafting, as vLLM 0.33.0's two n-gram drafters do it, and a greedy replay.

The drafter looks for the longest suffix of the context, between `min_n` and `max_n` tokens
long, that occurred earlier in the context; it proposes the (up to) `k` tokens that followed that
earlier occurrence. No model, no training: a string search. The two drafters differ in two ways:

- the V1 model runner's CPU `NgramProposer` takes the *earliest* occurrence when several tie and
  proposes nothing when nothing matches (`occurrence="earliest"`, `pad=False`);
- Model Runner V2's GPU `NgramGPUSpeculator` (what `method="ngram"` runs on the default runner)
  takes the *rightmost* one and always fills `k` draft slots, the unmatched ones with the last
  token, which the target then verifies like any draft (`occurrence="latest"`, `pad=True`):
  `vllm==0.33.0:vllm/v1/worker/gpu/spec_decode/ngram/speculator.py` `# Pack (n, pos) so a single max yields longest-n, rightmost-pos.`

`replay` runs speculative decoding against a known greedy output: after the prefill step (which
samples the first token, with nothing to verify), at each step the target
verifies the draft, keeps its longest correct prefix and adds one token of its own (the bonus,
or the correction). Greedy verification is lossless, so the output is the same with or without
drafts; only the number of target steps changes.
"""

from __future__ import annotations

from dataclasses import dataclass


OCCURRENCES = ("earliest", "latest")


def longest_match(context, min_n: int, max_n: int, occurrence: str = "earliest") -> tuple[int, int]:
    """(n, start): the longest suffix of `context` of length min_n..max_n that occurred earlier,
    and where its earliest (or, with occurrence="latest", its rightmost) earlier occurrence
    starts; (0, -1) when none does."""
    if not (1 <= min_n <= max_n):
        raise ValueError(f"need 1 <= min_n <= max_n, got min_n={min_n}, max_n={max_n}")
    if occurrence not in OCCURRENCES:
        raise ValueError(f"occurrence must be one of {OCCURRENCES}, got {occurrence!r}")
    tokens = list(context)
    total = len(tokens)
    for n in range(min(max_n, total - 1), min_n - 1, -1):
        suffix = tokens[total - n:]
        starts = range(total - n)  # earlier occurrences only (they may overlap the suffix)
        for start in (starts if occurrence == "earliest" else reversed(starts)):
            if tokens[start:start + n] == suffix:
                return n, start
    return 0, -1


def propose(context, min_n: int, max_n: int, k: int, max_model_len: int | None = None,
            occurrence: str = "earliest", pad: bool = False) -> list[int]:
    """Draft tokens for `context` (a sequence of token ids): the up-to-`k` tokens that followed
    the longest matching n-gram; [] when none matches, or with `pad` exactly `k` tokens, the
    missing ones filled with the context's last token."""
    if k < 1:
        raise ValueError(f"need k >= 1, got k={k}")
    tokens = list(context)
    if max_model_len is not None:
        k = min(k, max_model_len - len(tokens))
    n, start = longest_match(tokens, min_n, max_n, occurrence)
    if k <= 0:
        return []
    draft = tokens[start + n:start + n + k] if n else []
    if pad and tokens:
        draft += [tokens[-1]] * (k - len(draft))
    return draft


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
        """Steps where the drafter found a match (with `pad`, other steps verify padding too)."""
        return sum(1 for s in self.steps if s.matched)


def replay(prompt, output, min_n: int, max_n: int, k: int, occurrence: str = "earliest",
           pad: bool = False) -> Replay:
    """Speculative decoding of the known greedy `output` after `prompt`, one target step at a time
    (`occurrence` and `pad` as in `propose`: the defaults are the V1 runner's CPU drafter)."""
    prompt, output = list(prompt), list(output)
    if not output:
        raise ValueError("output must contain at least one token")
    steps, pos = [], 0
    while pos < len(output):
        context = prompt + output[:pos]
        n, _ = longest_match(context, min_n, max_n, occurrence)
        if pos == 0:  # the prefill step samples the first token; drafting starts after it
            n, draft = 0, []
        else:
            draft = propose(context, min_n, max_n, k, occurrence=occurrence, pad=pad)[:len(output) - pos - 1]
        accepted = 0
        while accepted < len(draft) and draft[accepted] == output[pos + accepted]:
            accepted += 1
        steps.append(Step(pos, n if draft and n else 0, tuple(draft), accepted))
        pos += accepted + 1
    return Replay(tuple(steps), len(output))
