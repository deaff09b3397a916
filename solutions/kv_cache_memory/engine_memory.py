"""One GPU's memory at engine startup, in the order vLLM spends it, and the checks that fail.

vLLM's worker takes a budget of `total x gpu_memory_utilization`, loads the weights, runs one
dummy forward pass at `max_num_batched_tokens` (the profile run) to measure the activation peak
and the memory allocated outside torch (NCCL, cuBLAS workspaces, custom all-reduce buffers), and
gives what is left to the KV cache. Before allocating it, the engine checks that one request of
`max_model_len` tokens fits. CUDA graphs are captured after the KV cache is allocated.

Everything here is per GPU (one tensor-parallel rank) and in bytes; what vLLM logs is GiB.
The activation peak is an estimate from the shapes (checked against a measured profile in the
notebooks); the non-torch figures are measurements, not estimates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solutions.capacity import VLLM_GPU_MEMORY_UTILIZATION, total_memory_bytes
from solutions.hardware import DTYPE_BYTES, GPU
from solutions.models import Model
from solutions.units import GiB

# Memory a vLLM worker holds outside torch's allocator after its profile run, measured on H100
# 80GB with Llama-3-8B: 1.79 GiB at TP1 and 3.58 GiB at TP2 ("non_torch_memory" in the profile
# log). Source: vllm-project/vllm pull request 10511 (merged, "[core] overhaul memory profiling
# and fix backward compatibility"), youkaichao's comment of 2024-12-14 with the two logs. The same
# logs measure a "PyTorch activation peak memory" of 1.26 GiB for Llama-3-8B at both TP sizes.
MEASURED_NON_TORCH_BYTES = {1: 1.79 * GiB, 2: 3.58 * GiB}
MEASURED_8B_ACTIVATION_PEAK_BYTES = 1.26 * GiB
MEASURED_SOURCE = ("vllm-project/vllm PR 10511, comment of 2024-12-14: vllm serve meta-llama/Meta-Llama-3-8B on "
                   "H100 (total_gpu_memory 79.22GiB), -tp 1 and -tp 2 profile logs")

# vLLM's `vllm serve` defaults on an H100-class GPU (the kit's serving simulator uses the same):
# max_num_batched_tokens 8,192 and max_num_seqs 1,024 (solutions/calibration/fidelity.py, vllm_serve_defaults).
SERVE_MAX_NUM_BATCHED_TOKENS = 8192
SERVE_MAX_NUM_SEQS = 1024

_SEE_DOCS = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."


def activation_peak_bytes(model: Model, tp: int = 1, max_num_batched_tokens: int = SERVE_MAX_NUM_BATCHED_TOKENS,
                          max_num_seqs: int = SERVE_MAX_NUM_SEQS, dtype: str = "bf16") -> float:
    """The profile run's torch peak above the weights, estimated from the shapes.

    A forward pass over T tokens holds the residual stream and one layer's largest transient
    at a time: the MLP's gate/up output (2 x intermediate / tp per token) and its activated
    half, beside the residual and the normalised hidden state. The sampler's dummy run then
    holds float32 logits over the whole vocabulary for `max_num_seqs` rows, about three copies
    (logits, probabilities, a sorted copy for top-p/top-k). The two happen one after the other,
    so the peak is the larger, not the sum."""
    for name, value in (("tp", tp), ("max_num_batched_tokens", max_num_batched_tokens),
                        ("max_num_seqs", max_num_seqs)):
        if not (isinstance(value, int) and value >= 1):
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    b = DTYPE_BYTES[dtype]
    t = max_num_batched_tokens
    gate_up = 2 if model.gated_mlp else 1
    forward = t * b * (2 * model.hidden_size + (gate_up + 1) * model.intermediate_size / tp)
    rows = min(max_num_seqs, max_num_batched_tokens)
    sampler = 3 * rows * model.vocab_size * DTYPE_BYTES["fp32"] + t * model.hidden_size * b
    return max(forward, sampler)


def non_torch_bytes(tp: int) -> float:
    """Measured memory outside torch per GPU (NCCL, cuBLAS, custom all-reduce). Only the TP sizes
    measured are known; anything else is an error rather than a guess."""
    if tp not in MEASURED_NON_TORCH_BYTES:
        raise ValueError(f"no measured non-torch memory for tp={tp}; measured: {sorted(MEASURED_NON_TORCH_BYTES)}")
    return MEASURED_NON_TORCH_BYTES[tp]


@dataclass(frozen=True)
class StartupLedger:
    """One rank's memory as vLLM's worker accounts it, in bytes."""

    total: float              # what torch reports as the GPU's total
    utilization: float        # gpu_memory_utilization
    weights: float            # this rank's shard of the weights
    activation_peak: float    # profile run's torch peak above the weights
    non_torch: float          # allocated outside torch by the time the profile ends
    kv_bytes_per_token: float # this rank's KV bytes per token
    block_size: int = 16

    @classmethod
    def of(cls, model: Model, gpu: GPU, tp: int = 1, utilization: float = VLLM_GPU_MEMORY_UTILIZATION,
           weight_dtype: str = "bf16", kv_dtype: str = "bf16",
           max_num_batched_tokens: int = SERVE_MAX_NUM_BATCHED_TOKENS,
           max_num_seqs: int = SERVE_MAX_NUM_SEQS, non_torch: float | None = None) -> "StartupLedger":
        """`non_torch` defaults to the measured figure for `tp`; pass it to state an assumption."""
        if not 0 < utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {utilization}")
        if model.num_kv_heads % tp and tp % model.num_kv_heads:
            raise ValueError(f"tp={tp} does not divide {model.name}'s {model.num_kv_heads} KV heads")
        kv_heads_per_rank = max(1, model.num_kv_heads // tp)  # replicated when tp > KV heads
        kv_token = 2 * model.n_attention * kv_heads_per_rank * model.head_dim * DTYPE_BYTES[kv_dtype]
        return cls(total=total_memory_bytes(gpu), utilization=utilization,
                   weights=model.weight_bytes(weight_dtype) / tp,
                   activation_peak=activation_peak_bytes(model, tp, max_num_batched_tokens, max_num_seqs),
                   non_torch=non_torch_bytes(tp) if non_torch is None else non_torch,
                   kv_bytes_per_token=kv_token)

    @property
    def requested(self) -> float:
        """total x gpu_memory_utilization: the instance's whole budget."""
        return self.total * self.utilization

    @property
    def non_kv(self) -> float:
        return self.weights + self.activation_peak + self.non_torch

    @property
    def available_kv(self) -> float:
        """What vLLM logs as 'Available KV cache memory' (may be negative)."""
        return self.requested - self.non_kv

    def kv_needed(self, max_model_len: int) -> float:
        """KV for one request of max_model_len tokens, rounded up to whole blocks."""
        return math.ceil(max_model_len / self.block_size) * self.block_size * self.kv_bytes_per_token

    def max_model_len_that_fits(self) -> int:
        """The longest request the pool holds: whole blocks, as vLLM's estimate returns."""
        if self.available_kv <= 0:
            return 0
        blocks = int(self.available_kv // (self.block_size * self.kv_bytes_per_token))
        return blocks * self.block_size

    def check(self, max_model_len: int) -> str | None:
        """The startup check on one rank: None if it passes, else the error text vLLM raises
        (the message of `_check_enough_kv_cache_memory`, vllm-project/vllm@
        001cabc1be16a59a70d720ed61a13b678c060a18:vllm/v1/core/kv_cache_utils.py)."""
        if self.available_kv <= 0:
            return ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                    f"when initializing the engine. {_SEE_DOCS}")
        needed = self.kv_needed(max_model_len)
        if needed <= self.available_kv:
            return None
        fit = self.max_model_len_that_fits()
        estimate = f"Based on the available memory, the estimated maximum model length is {fit}. " if fit else ""
        return (f"To serve at least one request with the models's max seq len ({max_model_len}), "
                f"({needed / GiB:.2f} GiB KV cache is needed, which is larger than the available KV cache "
                f"memory ({self.available_kv / GiB:.2f} GiB). {estimate}Try increasing "
                f"`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine. {_SEE_DOCS}")
