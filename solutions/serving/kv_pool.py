"""The KV block pool: how many fixed-size blocks of KV cache one replica has.

vLLM carves the KV cache into blocks of `block_size` tokens (16 unless an attention backend or a
hybrid model needs another: `vllm==0.33.0:vllm/config/cache.py` `DEFAULT_BLOCK_SIZE: ClassVar[int] = 16`,
resolved by the platform, `vllm==0.33.0:vllm/platforms/interface.py` `cache_config.block_size = preferred`).
The pool comes from the kit's one feasibility object, `solutions.capacity.kv_capacity`, which sizes
it the way vLLM's worker does (per rank: total x gpu_memory_utilization - the rank's weights - the
profile run's non-KV memory), with KV heads replicated when TP exceeds their count.
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions.capacity import VLLM_GPU_MEMORY_UTILIZATION, kv_capacity
from solutions.hardware import GPU
from solutions.models import Model
from solutions.units import GiB


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
    def for_replica(cls, model: Model, gpu: GPU, *, gpu_memory_utilization: float = VLLM_GPU_MEMORY_UTILIZATION,
                    non_kv_bytes: float = 2 * GiB, block_size: int = 16, weight_dtype: str = "bf16",
                    kv_dtype: str = "bf16", tp: int = 1) -> "KVPool":
        """Whole blocks in the pool vLLM would size on `tp` x `gpu`: `kv_capacity`'s tokens per
        rank (every rank holds the same tokens; KV heads replicated past their count)."""
        if not isinstance(block_size, int) or block_size < 1:
            raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
        cap = kv_capacity(model, gpu, tp, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                          gpu_memory_utilization=gpu_memory_utilization, non_kv_bytes=non_kv_bytes)
        return cls(num_blocks=cap.tokens // block_size, block_size=block_size)
