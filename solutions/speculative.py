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
