"""Where two tokenized prompts stop sharing a prefix, and what a block cache can still reuse.

A prefix cache reuses KV only up to the first token where two prompts differ, and a block cache
only in whole blocks before it. So the first question about a prefix-cache regression is a diff
of token ids, not of text: a timestamp early in a system prompt, or a template change that makes
the tokenizer merge characters across a boundary, moves the first difference and with it every
block after it.

    boundary = prefix_boundary(tokens_a, tokens_b, block_size=16)
    boundary.first_difference, boundary.reusable_tokens

`merge_at_join(tokenize, left, right)` asks the tokenizer question: is tokenize(left + right) the
same as tokenize(left) + tokenize(right)? If not, a client or server that tokenizes the pieces
separately builds prompts whose ids differ from the ones the whole text gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class PrefixBoundary:
    shared_tokens: int          # length of the common prefix
    first_difference: int | None  # index of the first differing token; None if one is a prefix of the other
    block_size: int

    @property
    def reusable_blocks(self) -> int:
        """Full blocks before the first difference: what a block cache can hit."""
        return self.shared_tokens // self.block_size

    @property
    def reusable_tokens(self) -> int:
        return self.reusable_blocks * self.block_size

    @property
    def lost_to_partial_block(self) -> int:
        """Shared tokens a block cache cannot reuse: they share a block with the first difference."""
        return self.shared_tokens - self.reusable_tokens


def prefix_boundary(a: Sequence[int], b: Sequence[int], block_size: int = 16) -> PrefixBoundary:
    if not (isinstance(block_size, int) and block_size >= 1):
        raise ValueError(f"block_size must be an integer >= 1, got {block_size!r}")
    shared = 0
    for x, y in zip(a, b):
        if x != y:
            return PrefixBoundary(shared, shared, block_size)
        shared += 1
    return PrefixBoundary(shared, None, block_size)     # one is a prefix of the other


def merge_at_join(tokenize: Callable[[str], list[int]], left: str, right: str,
                  block_size: int = 16) -> PrefixBoundary:
    """Compare the ids of the joined text with the ids of its pieces joined: where do they part?"""
    if not (isinstance(left, str) and isinstance(right, str)):
        raise ValueError("merge_at_join takes two strings")
    return prefix_boundary(tokenize(left + right), tokenize(left) + tokenize(right), block_size)
