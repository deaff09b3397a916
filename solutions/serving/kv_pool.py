"""The KV block pool: how many fixed-size blocks of KV cache one replica has.

vLLM carves the KV cache into blocks of `block_size` tokens (16 on CUDA unless an attention
backend forces another: vllm-project/vllm@1c0d9ecf5bad600df3e001bf642dd48c5ed25cc6:vllm/platforms/cuda.py)
and sizes the pool from `gpu_memory_utilization` (default 0.9:
vllm-project/vllm@c1d86421174a87056edc90a41dc9942391509e84:vllm/config/cache.py) minus the
memory that is not KV: weights plus what the profile run measures (activations, CUDA graphs),
vllm-project/vllm@35d5cda123ec28581759b6d34cde8052314fb1e6:vllm/v1/worker/gpu_worker.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solutions.hardware import GPU
from solutions.models import Model


@dataclass(frozen=True)
class KVPool:
    num_blocks: int
    block_size: int = 16

    def __post_init__(self):
        for name in ("num_blocks", "block_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

    @property
    def tokens(self) -> int:
        return self.num_blocks * self.block_size

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    @classmethod
    def for_replica(cls, model: Model, gpu: GPU, *, gpu_memory_utilization: float = 0.9,
                    non_kv_bytes: float = 0.0, block_size: int = 16, weight_dtype: str = "bf16",
                    kv_dtype: str = "bf16", tp: int = 1) -> "KVPool":
        """Blocks left for KV after the weights and `non_kv_bytes` (activations, CUDA graphs: a
        profile-run figure; 0 by default, which overstates the pool by a few GB)."""
        if not (0 < gpu_memory_utilization <= 1):
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}")
        if non_kv_bytes < 0:
            raise ValueError(f"non_kv_bytes must be >= 0, got {non_kv_bytes}")
        if not isinstance(tp, int) or tp < 1:
            raise ValueError(f"tp must be a positive integer, got {tp!r}")
        free = tp * gpu.hbm_capacity_bytes * gpu_memory_utilization - model.weight_bytes(weight_dtype) - non_kv_bytes
        per_block = block_size * model.kv_bytes_per_token(kv_dtype)
        blocks = math.floor(free / per_block)
        if blocks < 1:
            raise ValueError(
                f"no room for KV: {model.name} weights ({model.weight_bytes(weight_dtype) / 1e9:.1f} GB) plus "
                f"non_kv_bytes fill gpu_memory_utilization x {tp} x {gpu.name}")
        return cls(num_blocks=blocks, block_size=block_size)
