"""Speculative decoding arithmetic: expected tokens per target step, and what verifying costs.

A verification step runs the target on each sequence's last token plus its `d` draft tokens:
(d + 1) new tokens per sequence on top of its context, with the LM head at all d + 1 positions
(each one is sampled or checked). It is priced by the kit's step model like any other step.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from solutions.step_model import StepModel, StepShape, StepTime


def verify_step(sm: StepModel, batch: float, context_len: float, drafts: float) -> StepTime:
    """One target step verifying `drafts` tokens for each of `batch` sequences (0 = plain decode).
    Each sequence brings drafts + 1 new tokens after `context_len` cached ones (the sums of
    `StepShape.prefill`), and the LM head runs at all of them."""
    if drafts < 0:
        raise ValueError(f"drafts must be >= 0, got {drafts}")
    if drafts == 0:
        return sm.decode(batch, context_len)
    new = drafts + 1
    shape = StepShape(tokens=batch * new, seqs=batch, cached=batch * context_len,
                      pairs=batch * (new * context_len + new * (new + 1) / 2))
    return replace(sm.time(shape), lm_head_s=float(sm.lm_head_s(batch * new)))


def expected_tokens(conditional_rates) -> float:
    """Tokens per target step when draft position i is accepted with probability a_i given that
    positions 1..i-1 were: 1 (the target's own token) + sum_i prod_{j<=i} a_j."""
    a = np.asarray(conditional_rates, dtype=float)
    if a.ndim != 1 or np.any((a < 0) | (a > 1)):
        raise ValueError(f"rates must be a 1-D sequence of probabilities, got {conditional_rates!r}")
    return float(1.0 + np.cumprod(a).sum())


def expected_tokens_iid(alpha: float, k: int) -> float:
    """The same with one rate for every position (Leviathan et al. 2023): (1 - a^(k+1)) / (1 - a)."""
    if not 0 <= alpha <= 1 or k < 0:
        raise ValueError(f"need 0 <= alpha <= 1 and k >= 0, got alpha={alpha}, k={k}")
    return float(k + 1) if alpha == 1 else (1 - alpha ** (k + 1)) / (1 - alpha)


def conditional_from_cumulative(per_position) -> np.ndarray:
    """Engines report per-position acceptance as (accepted at position i) / (drafts): cumulative.
    The chance that position i is accepted given 1..i-1 were is the ratio of neighbours."""
    cum = np.asarray(per_position, dtype=float)
    if cum.ndim != 1 or cum.size == 0 or np.any(cum <= 0) or np.any(cum > 1) or np.any(np.diff(cum) > 0):
        raise ValueError(f"per-position rates must be non-increasing probabilities in (0, 1], got {per_position!r}")
    return np.concatenate(([cum[0]], cum[1:] / cum[:-1]))


def medusa_heads_s(sm: StepModel, batch: float, heads: int) -> float:
    """Extra time per step of `heads` Medusa-style heads on the target's last hidden state: each is a
    residual block (hidden x hidden) and its own hidden x vocab projection, i.e. the LM head's kernel
    with (1 + hidden / vocab) times its weights, on `batch` positions."""
    if heads < 0:
        raise ValueError(f"heads must be >= 0, got {heads}")
    m = sm.model
    return heads * float(sm.lm_head_s(batch)) * (1 + m.hidden_size / m.vocab_size)


def chain_draft_s(draft: StepModel, batch: float, context_len: float, k: int) -> float:
    """A draft model proposing `k` tokens one after another: k decode steps of the draft. Build
    `draft` with overhead_s=0 when the engine's per-step overhead is already paid by the target."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    return k * draft.decode(batch, context_len).seconds if k else 0.0
