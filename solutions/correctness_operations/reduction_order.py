"""Floating-point sums in a stated order, and bf16 rounding: how a batch changes the bits.

A GPU matmul adds K products per output in fp32, in an order the kernel picks: split-K cuts
the K axis into chunks summed by different thread blocks and then adds the partial sums.
Libraries pick the split (and the kernel) from the matrix shape, and the batch is one of the
shape's dimensions, so the same row can be summed in a different order when other requests
share the step. Float addition is not associative, so the order shows in the last bits, and
rounding activations to bf16 after every layer turns those bits into whole bf16 steps.

Everything here is exact IEEE arithmetic with a defined order (elementwise multiplies, and sums
over an outer array axis, which numpy performs row by row), so results are identical on every
machine; `tests/test_reduction_order.py` checks the order against an explicit loop.

    to_bf16(x)                      round float32 to the nearest bfloat16 (ties to even)
    ordered_matmul(x, w, splits)    x @ w with split-K summation, fp32 accumulators
    heuristic_split_k(m, n, sms)    a model of a library picking split-K from the GEMM shape
    ToyLM(...).run(prompts, steps, splits)   a small bf16 language model, greedy decoding
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BF16_MANTISSA_BITS = 8  # 7 stored + the implicit leading bit: a relative step between 2**-8 and 2**-7


def to_bf16(x) -> np.ndarray:
    """Round to the nearest bfloat16, ties to even; returned as float32 holding bf16 values.
    This is the rounding PyTorch's `.to(torch.bfloat16)` applies to finite values."""
    a = np.ascontiguousarray(x, dtype=np.float32)
    if not np.all(np.isfinite(a)):
        raise ValueError("to_bf16 takes finite values only")
    bits = a.view(np.uint32)  # finite values: adding at most 0x8000 cannot wrap around
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return rounded.view(np.float32)


def bf16_ulp(x) -> np.ndarray:
    """Distance from |x| to the next larger bfloat16 (x itself a bf16 value, not zero)."""
    a = np.abs(np.asarray(x, dtype=np.float64))
    return 2.0 ** (np.floor(np.log2(a)) - (BF16_MANTISSA_BITS - 1))


def ordered_sum(terms: np.ndarray, splits: int = 1) -> np.ndarray:
    """Sum `terms` over axis 0 in float32: cut it into `splits` equal contiguous chunks, add each
    chunk front to back, then add the chunk sums front to back (split-K, in one order)."""
    t = np.asarray(terms, dtype=np.float32)
    k = t.shape[0]
    if not isinstance(splits, (int, np.integer)) or splits < 1 or k % splits:
        raise ValueError(f"splits must be a positive integer dividing the reduction length {k}, got {splits!r}")
    chunks = t.reshape((splits, k // splits) + t.shape[1:])
    partial = np.add.reduce(chunks, axis=1)  # outer axis: one row at a time, front to back
    return np.add.reduce(partial, axis=0)


def ordered_matmul(x: np.ndarray, w: np.ndarray, splits: int = 1) -> np.ndarray:
    """`x @ w` (x: (m, K) or (K,), w: (K, n)) with every output summed by `ordered_sum`.
    With bf16-valued inputs each product is exact in fp32, as on tensor cores: only the order
    of the additions can change the result."""
    x = np.asarray(x, dtype=np.float32)
    w = np.asarray(w, dtype=np.float32)
    if w.ndim != 2 or x.shape[-1] != w.shape[0]:
        raise ValueError(f"shapes do not multiply: x {x.shape}, w {w.shape}")
    if x.ndim == 1:
        return ordered_sum(x[:, None] * w, splits)
    return ordered_sum(x.T[:, :, None] * w[:, None, :], splits)


def output_tiles(m: int, n: int, tile: int = 128) -> int:
    """Output tiles of an (m, n) GEMM result cut into tile x tile blocks: one thread block each."""
    if m < 1 or n < 1 or tile < 1:
        raise ValueError("m, n and tile must be positive")
    return -(-m // tile) * -(-n // tile)


def heuristic_split_k(m: int, n: int, sms: int, tile: int = 128, max_split: int = 8) -> int:
    """A model of how a GEMM library chooses split-K: when the output has fewer tiles than the GPU
    has SMs, split K into the largest power of two (at most `max_split`) that keeps every split's
    tiles on their own SM. cuBLAS's real heuristic is closed; the point it shares with this one is
    that `m`, the batch, is an input to the choice."""
    tiles = output_tiles(m, n, tile)
    split = 1
    while split * 2 <= max_split and tiles * split * 2 <= sms:
        split *= 2
    return split


def _rms_norm(x: np.ndarray) -> np.ndarray:
    mean_square = ordered_sum((x * x).T) / np.float32(x.shape[-1])
    return to_bf16(x / np.sqrt(mean_square + np.float32(1e-6))[:, None])


@dataclass(frozen=True)
class ToyLM:
    """A small bf16 decoder: token embedding, `layers` residual blocks (a causal mean over the
    sequence's past value vectors, then a ReLU MLP), RMSNorm, an LM head. Every activation is
    rounded to bf16 and every matmul is an `ordered_matmul`, so two split policies give two
    numerically different models that are the same model on paper. Weights are seeded."""

    vocab: int = 512
    hidden: int = 128
    ffn: int = 384
    layers: int = 4
    seed: int = 0

    def __post_init__(self):
        for name in ("vocab", "hidden", "ffn", "layers"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer")
        rng = np.random.default_rng(self.seed)
        d, f = self.hidden, self.ffn

        def weight(rows, cols):
            return to_bf16(rng.standard_normal((rows, cols), dtype=np.float32) / np.float32(np.sqrt(rows)))

        params = dict(embed=to_bf16(rng.standard_normal((self.vocab, d), dtype=np.float32)),
                      blocks=[(weight(d, d), weight(d, f), weight(f, d)) for _ in range(self.layers)],
                      head=to_bf16(weight(d, self.vocab) * 4.0))
        object.__setattr__(self, "_params", params)

    def run(self, prompts: np.ndarray, steps: int, splits: int = 1) -> "Generation":
        """Greedy continuation of each prompt row (token ids, shape (rows, prompt_len)) for
        `steps` tokens, every matmul summed with `splits` K-chunks. Rows never mix: each is
        computed exactly as if it ran alone with that split."""
        prompts = np.asarray(prompts)
        if prompts.ndim != 2 or prompts.shape[1] < 1 or not np.issubdtype(prompts.dtype, np.integer):
            raise ValueError("prompts must be a 2-D integer array (rows, prompt_len)")
        if prompts.min() < 0 or prompts.max() >= self.vocab:
            raise ValueError(f"token ids must lie in [0, {self.vocab})")
        if not isinstance(steps, int) or steps < 1:
            raise ValueError("steps must be a positive integer")
        p = self._params
        values = [[] for _ in range(self.layers)]  # per layer, the past value vectors (the "KV cache")
        tokens, logits, residuals = list(prompts.T), [], []
        for t in range(prompts.shape[1] + steps - 1):
            x = p["embed"][tokens[t]]
            stream = [x]
            for (wv, w_up, w_down), cache in zip(p["blocks"], values):
                cache.append(to_bf16(ordered_matmul(_rms_norm(x), wv, splits)))
                context = ordered_sum(np.stack(cache)) / np.float32(len(cache))
                x = to_bf16(x + to_bf16(context))
                up = to_bf16(np.maximum(ordered_matmul(_rms_norm(x), w_up, splits), 0))
                x = to_bf16(x + to_bf16(ordered_matmul(up, w_down, splits)))
                stream.append(x)
            if t >= prompts.shape[1] - 1:
                z = to_bf16(ordered_matmul(_rms_norm(x), p["head"], splits))
                logits.append(z)
                residuals.append(np.stack(stream))
                tokens.append(np.argmax(z, axis=1))  # ties go to the lowest id, as torch.argmax
        return Generation(np.stack(tokens[prompts.shape[1]:], axis=1), np.stack(logits, axis=1),
                          np.stack(residuals, axis=2))


@dataclass(frozen=True)
class Generation:
    """What `ToyLM.run` produced: tokens (rows, steps); logits (rows, steps, vocab), bf16 values;
    residual (layers + 1, rows, steps, hidden): the residual stream after the embedding and after
    each block, at every generated position."""

    tokens: np.ndarray
    logits: np.ndarray
    residual: np.ndarray
