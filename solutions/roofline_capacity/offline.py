"""Offline (batch) inference priced in GPU-seconds per item: prefill and decode, separately.

With no latency target the engine runs the biggest batch memory allows, so an item's cost is
its prefill steps plus its share of decode steps at that batch. Step times come from the kit's one
step model (`solutions.step_model.StepModel.of`: calibrated kernels, tensor-parallel all-reduce,
per-step overhead), in either of its named regimes: `regime="kernel-ceiling"` (the default, a
well-tuned engine) or `regime="vllm-defaults"` (vLLM as it runs at its defaults), so a bill says
which it quotes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from solutions.capacity import VLLM_GPU_MEMORY_UTILIZATION, KVCapacity, kv_capacity
from solutions.hardware import A100_80GB_SXM, GPU
from solutions.models import Model
from solutions.step_model import Precision, StepModel
from solutions.units import GiB

NON_KV_BYTES_PER_GPU = 2 * GiB  # activations, CUDA graphs, NCCL: assumed, as in solutions.capacity
PREFIX_CACHE_BLOCK = 16  # vLLM's default KV block (tokens): its prefix cache hashes and matches whole blocks only


@dataclass(frozen=True)
class OfflinePass:
    """One pass over a dataset: every item is `shared_prefix` + `unique` prompt tokens in,
    `output` tokens out. `prefix_cached`: the shared prefix hits the prefix cache, so it is
    computed once and its KV blocks are held once, shared by every running sequence (the blocks a
    sequence holds are its own tokens only; attention still reads the shared prefix per sequence)."""

    model: Model
    shared_prefix: int
    unique: int
    output: int
    gpu: GPU = A100_80GB_SXM
    tp: int = 1
    prefix_cached: bool = False
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    math_dtype: str = "bf16"  # tensor-core inputs: "fp8"/"int8" for W8A8, else weight-only quantisation
    gpu_memory_utilization: float = VLLM_GPU_MEMORY_UTILIZATION
    max_num_seqs: int = 256  # vLLM's default on A100 (arg_utils get_batch_defaults)
    max_num_batched_tokens: int = 8192  # vLLM's offline default on A100
    regime: str = "kernel-ceiling"  # or "vllm-defaults" (solutions.step_defaults.REGIMES)

    def __post_init__(self):
        for name in ("unique", "output", "tp", "max_num_seqs", "max_num_batched_tokens"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.shared_prefix < 0:
            raise ValueError(f"shared_prefix must be >= 0, got {self.shared_prefix}")

    @property
    def step_model(self) -> StepModel:
        precision = Precision(f"W:{self.weight_dtype} A:{self.math_dtype} KV:{self.kv_dtype}", self.weight_dtype,
                              self.math_dtype, self.kv_dtype)
        return StepModel.of(self.model, self.gpu, self.tp, precision, regime=self.regime)

    @property
    def prompt(self) -> int:
        return self.shared_prefix + self.unique

    @property
    def mean_context(self) -> float:
        """A running sequence holds, on average, its prompt plus half its output."""
        return self.prompt + self.output / 2

    def kv_pool_bytes(self) -> float:
        """KV pool summed over the `tp` GPUs."""
        return self.tp * self.kv_capacity().pool_bytes

    def kv_capacity(self) -> KVCapacity:
        """The pool per rank and the tokens it holds, KV-head replication included when `tp`
        exceeds the model's KV heads (`solutions.capacity.kv_capacity`)."""
        return kv_capacity(self.model, self.gpu, self.tp, weight_dtype=self.weight_dtype, kv_dtype=self.kv_dtype,
                           gpu_memory_utilization=self.gpu_memory_utilization, non_kv_bytes=NON_KV_BYTES_PER_GPU)

    def prefix_hit(self, block: int = PREFIX_CACHE_BLOCK) -> "OfflinePass":
        """The pass as vLLM's prefix cache (on by default) serves it when the shared prefix comes
        first and is byte-identical: the whole blocks of the prefix hit, the tokens of its last
        partial block are recomputed with the item's own."""
        hit = self.shared_prefix // block * block
        return replace(self, shared_prefix=hit, unique=self.unique + self.shared_prefix - hit, prefix_cached=hit > 0)

    @property
    def mean_private_context(self) -> float:
        """Tokens of KV a running sequence holds on its own: with a cached shared prefix, not the prefix."""
        return self.mean_context - (self.shared_prefix if self.prefix_cached else 0)

    def batch(self) -> int:
        """Running sequences: what the pool holds at the mean private context (after one copy of a
        cached shared prefix), capped by max_num_seqs."""
        shared = self.shared_prefix if self.prefix_cached else 0
        fits = math.floor((self.kv_capacity().tokens - shared) / self.mean_private_context)
        if fits < 1:
            raise ValueError(f"not one sequence of {self.mean_context:.0f} tokens fits in the KV pool")
        return min(self.max_num_seqs, fits)

    def prefill_gpu_s(self) -> float:
        """GPU-seconds of prefill per item (all `tp` GPUs), prompts packed per step."""
        new = self.unique if self.prefix_cached else self.prompt
        per_step = max(1, self.max_num_batched_tokens // new)
        t = self.step_model.prefill(new, per_step, cached_tokens=self.prompt - new).seconds
        return self.tp * t / per_step

    def decode_gpu_s(self) -> float:
        """GPU-seconds of decode per item: `output` steps, each shared by the running batch."""
        b = self.batch()
        step = self.step_model.decode(b, self.mean_context).seconds
        return self.tp * self.output * step / b

    def gpu_s(self) -> float:
        return self.prefill_gpu_s() + self.decode_gpu_s()
