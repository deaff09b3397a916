"""Packed (varlen) causal attention in numpy: `cu_seqlens` indexing and a tiled kernel.

Packing puts several requests' tokens back to back in one `[total_tokens, head_dim]` tensor and
describes the boundaries with `cu_seqlens = [0, l0, l0+l1, ...]` (the FlashAttention varlen API's
name; vLLM calls it `query_start_loc`). A kernel tiles that tensor; where a tile's rows span a
sequence boundary the mask must come from each row's own sequence, not from the tile.

`tiled_attention` is a FlashAttention-style kernel (online softmax over key tiles) written for
reading, not speed. Two tilings: "flat" tiles the packed tensor as if it were one sequence (tiles
may straddle boundaries), "per_sequence" gives every sequence its own tiles (the scheme of
FlashAttention-2's varlen grid and vLLM's Triton unified attention). Two masks: "segment" (row
and key in the same sequence, key not after row: correct) and "tile_start" (the key range starts
at the sequence of the tile's *first* row and only `key <= row` is masked: the bug this module
exists to show). `reference_attention` runs every sequence alone: the oracle.
"""

from __future__ import annotations

import numpy as np

TILINGS = ("flat", "per_sequence")
MASKS = ("segment", "tile_start")


def cu_seqlens(lengths) -> np.ndarray:
    """Cumulative sequence starts, `[0, l0, l0+l1, ..., total]` (int64)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.ndim != 1 or len(lengths) == 0:
        raise ValueError("lengths must be a non-empty 1-D list of sequence lengths")
    if np.any(lengths < 1):
        raise ValueError(f"every sequence needs at least one token, got lengths {lengths.tolist()}")
    return np.concatenate([[0], np.cumsum(lengths)])


def _check_cu(cu, total: int) -> np.ndarray:
    cu = np.asarray(cu, dtype=np.int64)
    if cu.ndim != 1 or len(cu) < 2 or cu[0] != 0 or np.any(np.diff(cu) < 1) or cu[-1] != total:
        raise ValueError(f"cu_seqlens must rise strictly from 0 to the {total} packed tokens, got {cu.tolist()}")
    return cu


def sequence_of(cu, token) -> np.ndarray:
    """Which sequence each packed token index belongs to (a binary search, as kernels do)."""
    return np.searchsorted(np.asarray(cu), token, side="right") - 1


def position_in_sequence(cu, token) -> np.ndarray:
    """A packed token's position inside its own sequence (what RoPE and the causal mask need)."""
    cu = np.asarray(cu)
    return np.asarray(token) - cu[sequence_of(cu, token)]


def query_tiles(cu, block: int, tiling: str = "per_sequence") -> list[tuple[int, int]]:
    """The `[start, stop)` row ranges of the packed tensor that each query tile covers.

    "per_sequence" numbers tiles the way vLLM's Triton unified attention does: sequence i's
    first tile is global tile `cu[i] // block + i`, so a grid of `total // block + num_seqs`
    programs always suffices; programs past their sequence's end exit at once (returned here
    as nothing)."""
    cu = np.asarray(cu, dtype=np.int64)
    if block < 1:
        raise ValueError(f"block must be a positive number of rows, got {block}")
    if tiling not in TILINGS:
        raise ValueError(f"tiling must be one of {TILINGS}, got {tiling!r}")
    total = int(cu[-1])
    if tiling == "flat":
        return [(s, min(s + block, total)) for s in range(0, total, block)]
    tiles = []
    n = len(cu) - 1
    first_tile = cu[:-1] // block + np.arange(n)
    for g in range(total // block + n):  # one program per grid slot
        i = int(np.searchsorted(first_tile, g, side="right") - 1)
        local = g - int(first_tile[i])
        start = int(cu[i]) + local * block
        if start >= cu[i + 1]:
            continue  # empty program: past the end of its sequence
        tiles.append((start, min(start + block, int(cu[i + 1]))))
    return tiles


def _softmax_rows(scores: np.ndarray) -> np.ndarray:
    scores = scores - scores.max(axis=1, keepdims=True)
    weights = np.exp(scores)
    return weights / weights.sum(axis=1, keepdims=True)


def reference_attention(q, k, v, cu) -> np.ndarray:
    """Causal attention run on each sequence alone: the oracle a packed kernel must equal."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    cu = _check_cu(cu, len(q))
    out = np.empty_like(v)
    scale = 1.0 / np.sqrt(q.shape[1])
    for s, e in zip(cu[:-1], cu[1:]):
        scores = q[s:e] @ k[s:e].T * scale
        scores[np.triu_indices(e - s, 1)] = -np.inf
        out[s:e] = _softmax_rows(scores) @ v[s:e]
    return out


def tiled_attention(q, k, v, cu, block_m: int = 16, block_n: int = 16, tiling: str = "flat",
                    mask: str = "segment") -> np.ndarray:
    """Causal attention over a packed batch, one query tile at a time with an online softmax.

    For each query tile the key range runs from the start of the sequence of the tile's first
    row to the tile's last row (keys after it are masked for every row anyway). `mask` decides
    what is masked inside that range; see the module docstring."""
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}, got {mask!r}")
    if block_n < 1:
        raise ValueError(f"block_n must be a positive number of keys, got {block_n}")
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    cu = _check_cu(cu, len(q))
    scale = 1.0 / np.sqrt(q.shape[1])
    out = np.full_like(v, np.nan)
    for r0, r1 in query_tiles(cu, block_m, tiling):
        rows = np.arange(r0, r1)
        row_seq = sequence_of(cu, rows)
        k_start, k_stop = int(cu[row_seq[0]]), r1
        m = np.full(len(rows), -np.inf)       # running max
        denom = np.zeros(len(rows))           # running sum of exp
        acc = np.zeros((len(rows), v.shape[1]))
        for c0 in range(k_start, k_stop, block_n):
            cols = np.arange(c0, min(c0 + block_n, k_stop))
            allowed = cols[None, :] <= rows[:, None]
            if mask == "segment":
                allowed &= sequence_of(cu, cols)[None, :] == row_seq[:, None]
            s = np.where(allowed, q[rows] @ k[cols].T * scale, -np.inf)
            m_new = np.maximum(m, s.max(axis=1))
            shift = np.where(np.isfinite(m_new), m_new, 0.0)  # a row with no key yet: no NaN
            p = np.exp(s - shift[:, None])
            correction = np.exp(m - shift)
            denom = denom * correction + p.sum(axis=1)
            acc = acc * correction[:, None] + p @ v[cols]
            m = m_new
        out[rows] = acc / denom[:, None]
    return out


def wrong_rows(out, ref, atol: float = 1e-9) -> np.ndarray:
    """Packed rows whose output differs from the oracle's (NaN counts as different)."""
    return np.flatnonzero(~np.isclose(out, ref, rtol=0.0, atol=atol).all(axis=1))


def rows_that_leak(cu, block_m: int) -> np.ndarray:
    """Rows the "tile_start" bug corrupts under flat tiling: rows of a tile whose first row
    belongs to an earlier sequence (they see that sequence's keys)."""
    cu = np.asarray(cu, dtype=np.int64)
    rows = np.arange(int(cu[-1]))
    tile_first = (rows // block_m) * block_m
    return rows[sequence_of(cu, tile_first) != sequence_of(cu, rows)]
