"""The roofline: what a forward step must do (FLOPs and bytes), and one kernel's time.

`StepCost` counts a step's work, split so MBU and MFU can name their numerators. `kernel_time`
is the roofline of ONE kernel: the larger of its compute time and its memory time, each at a
*named* fraction of the datasheet peak (`Efficiency`), plus its launch floor. A step is many
kernels run one after another, each at its own bound: `solutions.step_model` sums them. Taking
one max() over a whole step's totals would let the bandwidth-bound attention hide behind
compute-bound GEMMs, so nothing in the kit does that.

Utilisation is always achieved / peak with both operands stated:
  MBU = (bytes the step must move / step time) / peak HBM bandwidth
  MFU = (FLOPs the step must do / step time) / peak dense FLOP/s
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solutions.hardware import DTYPE_BYTES, GPU
from solutions.models import Model, vocab_bytes_per_param


@dataclass(frozen=True)
class Efficiency:
    """Fractions of peak a real step achieves, and the time it spends outside kernels."""

    compute: float = 1.0  # achieved / peak dense FLOP/s
    memory: float = 1.0  # achieved / peak HBM bandwidth
    overhead_s: float = 0.0  # a fixed floor per kernel: launch, prologue, the last partial wave
    # Bytes per second one thread block moves through one token's row. Kernels that give each token
    # one block (vLLM's CUDA norms, activations and RoPE, which Vidur profiled) take at least row
    # bytes / this, however few the tokens: at decode batches the row sets their time, not HBM.
    # inf: no such floor.
    row_bytes_per_s: float = float("inf")

    def __post_init__(self):
        if not (0 < self.compute <= 1 and 0 < self.memory <= 1):
            raise ValueError(f"efficiencies must be in (0, 1]: {self}")
        if self.overhead_s < 0:
            raise ValueError(f"overhead_s must be >= 0, got {self.overhead_s}")
        if not self.row_bytes_per_s > 0:
            raise ValueError(f"row_bytes_per_s must be > 0, got {self.row_bytes_per_s}")


IDEAL = Efficiency()


@dataclass(frozen=True)
class StepCost:
    """What one forward step must do. Bytes are split so MBU can name its numerator."""

    flops: float = 0.0
    weight_bytes: float = 0.0
    kv_read_bytes: float = 0.0
    kv_write_bytes: float = 0.0
    activation_bytes: float = 0.0  # "the rest": activations and logits written and read
    tokens: int = 0

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_read_bytes + self.kv_write_bytes + self.activation_bytes

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP per byte moved."""
        return self.flops / self.bytes

    def __add__(self, other: "StepCost") -> "StepCost":
        """Two workloads batched into one step: the weights are read once, not twice.

        Exact for a dense model. For an MoE the combined batch touches more experts than either
        part, so take the weight bytes from `weight_bytes_read(model, total tokens)` instead."""
        return StepCost(
            flops=self.flops + other.flops,
            weight_bytes=max(self.weight_bytes, other.weight_bytes),
            kv_read_bytes=self.kv_read_bytes + other.kv_read_bytes,
            kv_write_bytes=self.kv_write_bytes + other.kv_write_bytes,
            activation_bytes=self.activation_bytes + other.activation_bytes,
            tokens=self.tokens + other.tokens,
        )


def attention_flops(model: Model, new_tokens: int, cached_tokens: int) -> float:
    """QK^T and PV for `new_tokens` causal queries on top of `cached_tokens` of context:
    query i sees cached + i + 1 keys; each (query, key) pair costs 2 matmuls x 2 FLOP x head_dim
    per query head."""
    pairs = new_tokens * cached_tokens + new_tokens * (new_tokens + 1) / 2
    return 4.0 * model.n_attention * model.num_heads * model.head_dim * pairs


def activation_bytes_per_token(model: Model, dtype: str = "bf16") -> float:
    """Activations a token writes and reads back between kernels, per layer: the residual
    stream in and out, Q/K/V, the attention output, and the MLP's gate/up/down tensors."""
    b = DTYPE_BYTES[dtype]
    qkv = (model.num_heads + 2 * model.num_kv_heads) * model.head_dim
    attn = 2 * model.hidden_size + qkv + model.num_heads * model.head_dim
    mlp = 2 * model.hidden_size + 3 * model.intermediate_size * model.experts_per_token
    return 2 * b * (model.n_attention * attn + model.n_mlp * mlp)


def expected_experts_touched(model: Model, tokens: int) -> float:
    """Distinct experts a layer reads for `tokens` tokens routed uniformly at random top-k:
    E * (1 - (1 - k/E)^tokens). One token reads k experts; a big batch reads all E."""
    e, k = model.num_experts, model.experts_per_token
    return e * (1 - (1 - k / e) ** tokens)


def weight_bytes_read(model: Model, tokens: int, dtype: str = "bf16") -> float:
    """Weights a step streams from HBM: every matmul weight, but for an MoE only the experts
    its tokens touch. The embedding table is gathered row by row, not streamed. A quantised
    checkpoint's LM head stays in BF16, as `Model.weight_bytes` says."""
    untied_embedding = 0 if model.tie_word_embeddings else model.embedding_params
    mlp = model.n_mlp * model.mlp_params_per_layer()
    if model.num_experts > 1:
        mlp = model.n_mlp * model.mlp_params_per_layer(expected_experts_touched(model, tokens))
    dense = model.params - untied_embedding - model.n_mlp * model.mlp_params_per_layer()
    head = model.embedding_params  # the LM head, read every step
    return (dense + mlp - head) * DTYPE_BYTES[dtype] + head * vocab_bytes_per_param(dtype)


def _logit_flops(model: Model, sampled_positions: int) -> float:
    return 2.0 * model.embedding_params * sampled_positions


def decode_step(
    model: Model,
    batch: int,
    context_len: float,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
) -> StepCost:
    """One decode step: `batch` sequences each emit one token after `context_len` cached tokens."""
    _check_positive(batch=batch)
    body_params = model.matmul_params_per_token - model.embedding_params
    return StepCost(
        flops=2.0 * body_params * batch + _logit_flops(model, batch)
        + batch * attention_flops(model, 1, context_len),
        weight_bytes=weight_bytes_read(model, batch, weight_dtype),
        kv_read_bytes=batch * context_len * model.kv_bytes_per_token(kv_dtype),
        kv_write_bytes=batch * model.kv_bytes_per_token(kv_dtype),
        activation_bytes=batch * activation_bytes_per_token(model),
        tokens=batch,
    )


def prefill(
    model: Model,
    tokens: int,
    cached_tokens: int = 0,
    sequences: int = 1,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
) -> StepCost:
    """Prefill `sequences` prompts of `tokens` new tokens each, on top of `cached_tokens`
    already in the KV cache (a prefix-cache hit or an earlier chunk). Only each sequence's
    last position computes logits."""
    _check_positive(tokens=tokens, sequences=sequences)
    body_params = model.matmul_params_per_token - model.embedding_params
    n = tokens * sequences
    kv = model.kv_bytes_per_token(kv_dtype)
    return StepCost(
        flops=2.0 * body_params * n + _logit_flops(model, sequences)
        + sequences * attention_flops(model, tokens, cached_tokens),
        weight_bytes=weight_bytes_read(model, n, weight_dtype),
        kv_read_bytes=sequences * cached_tokens * kv,
        kv_write_bytes=n * kv,
        activation_bytes=n * activation_bytes_per_token(model),
        tokens=n,
    )


def compute_time(cost: StepCost, gpu: GPU, eff: Efficiency = IDEAL, dtype: str = "bf16", tp: int = 1) -> float:
    return cost.flops / (tp * gpu.peak_flops(dtype) * eff.compute)


def memory_time(cost: StepCost, gpu: GPU, eff: Efficiency = IDEAL, tp: int = 1) -> float:
    return cost.bytes / (tp * gpu.hbm_bytes_per_s * eff.memory)


def kernel_time(cost: StepCost, gpu: GPU, eff: Efficiency = IDEAL, dtype: str = "bf16", tp: int = 1):
    """Seconds for ONE kernel (or launches of one kind) that does `cost`: max(compute, memory) +
    `eff.overhead_s`. `dtype` picks the tensor-core peak; `tp` GPUs split the work evenly.
    Works elementwise when the cost's fields are numpy arrays."""
    t = np.maximum(compute_time(cost, gpu, eff, dtype, tp), memory_time(cost, gpu, eff, tp)) + eff.overhead_s
    return float(t) if np.ndim(t) == 0 else t


def mbu(bytes_moved: float, seconds: float, gpu: GPU, n_gpus: int = 1) -> float:
    """Model bandwidth utilisation: bytes that must move / time taken / peak HBM bandwidth."""
    return bytes_moved / seconds / (n_gpus * gpu.hbm_bytes_per_s)


def mfu(flops: float, seconds: float, gpu: GPU, dtype: str = "bf16", n_gpus: int = 1) -> float:
    """Model FLOP utilisation: FLOPs that must be done / time taken / peak dense FLOP/s."""
    return flops / seconds / (n_gpus * gpu.peak_flops(dtype))


def ridge_point(gpu: GPU, dtype: str = "bf16", eff: Efficiency = IDEAL) -> float:
    """FLOP per byte above which a kernel is compute-bound."""
    return gpu.peak_flops(dtype) * eff.compute / (gpu.hbm_bytes_per_s * eff.memory)


def _check_positive(**values):
    for name, value in values.items():
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")
