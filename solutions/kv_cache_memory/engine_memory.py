"""One GPU's memory at vLLM 0.33.0's start-up, in the order the worker spends it, and the checks.

The one ledger q22 and q37 both price (Llama 3.3 70B on two H100s): both pages call
`StartupLedger.of`, and `tests/test_engine_memory.py` holds it to both prompts' premises.

What vLLM 0.33.0 does (`Worker.init_device` and `Worker.determine_available_memory` in
`vllm==0.33.0:vllm/v1/worker/gpu_worker.py` `# Now take memory snapshot after NCCL is initialized`; the
accounting in `vllm==0.33.0:vllm/utils/mem_utils.py` `result.non_kv_cache_memory = result.total_consumed + result.transient_peak_headroom`):

1. `init_device` sets up NCCL and creates the cuBLAS handles, *then* takes the memory snapshot and
   the budget `ceil(total x gpu_memory_utilization)`; it refuses to go on if the free memory at
   the snapshot is below the budget. What was allocated before the snapshot (CUDA context, NCCL,
   cuBLAS handles) is not charged to the budget: it has to fit in the `1 - utilization` share.
2. The weights load.
3. The profile run (one dummy forward of `max_num_batched_tokens` and the sampler's dummy runs)
   inside `memory_profiling`: everything consumed since the snapshot (`total_consumed`, from
   `mem_get_info`: the weights, persistent workspaces, anything allocated outside torch since) plus
   the transient torch peak above what stays allocated (`transient_peak_headroom`).
4. CUDA-graph memory is profiled by capturing a few graphs against a throwaway KV cache and, with
   `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` on (the default), subtracted from the budget too.
5. available KV = budget - non-KV memory - graph estimate; the engine core then checks that one
   request of `max_model_len` fits
   (`vllm==0.33.0:vllm/v1/core/kv_cache_planning.py` `def _check_enough_kv_cache_memory(`), against
   that memory less one block: the null block the block pool holds back, which the check and the
   estimated maximum length both leave out (`usable_kv`).

History: the 3.58 GiB "non_torch_memory" the bank used to charge at TP 2 is a V0 log of
December 2024 (vllm-project/vllm#10511, read: youkaichao's comment of 2024-12-14, Llama 3 8B on
an H100), when the baseline was taken before NCCL and everything outside torch counted against
the budget. After the snapshot moved behind NCCL set-up, the logged non-torch term is small
(0.16 GiB, vllm-project/vllm#12126, read: the description's H100 log). It survives here only as
history and as the one measured activation peak that calibrates the shape estimate.

Three terms are not measured for this deployment; `TERMS` brackets them (low / central / high)
and a page says which corner its verdict needs. Everything is per GPU (one TP rank), in bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solutions.capacity import VLLM_GPU_MEMORY_UTILIZATION, total_memory_bytes
from solutions.hardware import DTYPE_BYTES, GPU
from solutions.models import LLAMA_3_1_8B, Model
from solutions.units import GiB

VLLM_VERSION = "0.33.0"

# vLLM 0.33.0's default share, the kit's one constant (`solutions.capacity`, which cites
# `vllm==0.33.0:vllm/config/cache.py` `gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)`).
DEFAULT_GPU_MEMORY_UTILIZATION = VLLM_GPU_MEMORY_UTILIZATION

# `vllm serve` on an H100-class GPU (>= 70 GiB, not an A100), OPENAI_API_SERVER: 8192 tokens, 1024 seqs:
# `vllm==0.33.0:vllm/engine/arg_utils.py` `# For GPUs like H100 and H200, use larger offline defaults.`
SERVE_MAX_NUM_BATCHED_TOKENS = 8192
SERVE_MAX_NUM_SEQS = 1024

# History, V0 (vllm-project/vllm#10511, youkaichao's comment of 2024-12-14, Meta-Llama-3-8B on an
# H100 showing total_gpu_memory 79.22GiB): "non_torch_memory 1.79GiB" at TP 1, "3.58GiB" at TP 2,
# "PyTorch activation peak memory 1.26GiB" at both. Only the activation peak is used (calibration).
HISTORY_V0_NON_TORCH_BYTES = {1: 1.79 * GiB, 2: 3.58 * GiB}
MEASURED_8B_ACTIVATION_PEAK_BYTES = 1.26 * GiB
MEASURED_SOURCE = ("vllm-project/vllm#10511, comment of 2024-12-14: vllm serve meta-llama/Meta-Llama-3-8B on "
                   "H100 (total_gpu_memory 79.22GiB), -tp 1 and -tp 2 profile logs (V0; history)")
# After the snapshot moved behind NCCL set-up (vllm-project/vllm#12126, description, Llama 3.2 11B
# Vision on an H100): "non_torch_memory takes 0.16GiB".
LOGGED_NON_TORCH_AFTER_SNAPSHOT_BYTES = 0.16 * GiB

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


def activation_calibration() -> float:
    """Measured / estimated activation peak on the one measured profile (Llama 3 8B, TP 1, 8,192
    tokens, 256 rows, V0): how far the shape estimate can undershoot."""
    return MEASURED_8B_ACTIVATION_PEAK_BYTES / activation_peak_bytes(LLAMA_3_1_8B, 1, 8192, 256)


@dataclass(frozen=True)
class ProfileTerms:
    """The start-up terms not measured for this deployment, per GPU.

    activation_scale: multiplies the shape estimate of the profile run's transient peak.
    after_snapshot:   persistent memory consumed after the snapshot besides the weights
                      (workspaces, anything allocated outside torch since), in bytes.
    cuda_graphs:      the CUDA-graph estimate the profile subtracts, in bytes.
    """

    name: str
    activation_scale: float
    after_snapshot: float
    cuda_graphs: float


def _terms() -> dict[str, ProfileTerms]:
    return {
        # the raw shape estimate; the one logged non-torch figure; a small graph pool
        "low": ProfileTerms("low", 1.0, LOGGED_NON_TORCH_AFTER_SNAPSHOT_BYTES, 0.5 * GiB),
        # the raw estimate; ~3x the logged figure for TP 2's extra buffers; a 1 GiB graph pool
        "central": ProfileTerms("central", 1.0, 0.45 * GiB, 1.0 * GiB),
        # the estimate scaled up as far as it undershot the measured 8B profile; 0.75 GiB; 1.5 GiB
        "high": ProfileTerms("high", activation_calibration(), 0.75 * GiB, 1.5 * GiB),
    }


TERMS = _terms()


@dataclass(frozen=True)
class StartupLedger:
    """One rank's memory as vLLM 0.33.0's worker accounts it, in bytes."""

    total: float              # what torch reports as the GPU's total
    utilization: float        # gpu_memory_utilization
    weights: float            # this rank's shard of the weights
    activation_peak: float    # the profile run's transient torch peak
    after_snapshot: float     # other persistent memory consumed since the snapshot
    cuda_graphs: float        # the CUDA-graph estimate subtracted from the budget
    kv_bytes_per_token: float # this rank's KV bytes per token
    block_size: int = 16      # `vllm==0.33.0:vllm/config/cache.py` `DEFAULT_BLOCK_SIZE: ClassVar[int] = 16`
    terms: str = "central"

    @classmethod
    def of(cls, model: Model, gpu: GPU, tp: int = 1, utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
           weight_dtype: str = "bf16", kv_dtype: str = "bf16",
           max_num_batched_tokens: int = SERVE_MAX_NUM_BATCHED_TOKENS,
           max_num_seqs: int = SERVE_MAX_NUM_SEQS, terms: str = "central") -> "StartupLedger":
        """The ledger of one rank of `model` on `gpu` at tensor parallel `tp`, at one corner of
        `TERMS` ("low", "central", "high")."""
        if not 0 < utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {utilization}")
        if terms not in TERMS:
            raise ValueError(f"terms must be one of {sorted(TERMS)}, got {terms!r}")
        if model.num_kv_heads % tp and tp % model.num_kv_heads:
            raise ValueError(f"tp={tp} does not divide {model.name}'s {model.num_kv_heads} KV heads")
        t = TERMS[terms]
        kv_heads_per_rank = max(1, model.num_kv_heads // tp)  # replicated when tp > KV heads
        kv_token = 2 * model.n_attention * kv_heads_per_rank * model.head_dim * DTYPE_BYTES[kv_dtype]
        return cls(total=total_memory_bytes(gpu), utilization=utilization,
                   weights=model.weight_bytes(weight_dtype) / tp,
                   activation_peak=t.activation_scale * activation_peak_bytes(model, tp, max_num_batched_tokens,
                                                                              max_num_seqs),
                   after_snapshot=t.after_snapshot, cuda_graphs=t.cuda_graphs,
                   kv_bytes_per_token=kv_token, terms=terms)

    @classmethod
    def corners(cls, model: Model, gpu: GPU, tp: int = 1, **kw) -> dict[str, "StartupLedger"]:
        """The same deployment at each corner of `TERMS`."""
        return {name: cls.of(model, gpu, tp, terms=name, **kw) for name in TERMS}

    @property
    def requested(self) -> float:
        """ceil(total x gpu_memory_utilization): the instance's whole budget."""
        return math.ceil(self.total * self.utilization)

    @property
    def headroom(self) -> float:
        """total - budget: what must hold the memory allocated before the snapshot (CUDA context,
        NCCL, cuBLAS handles) and whatever the profile missed."""
        return self.total - self.requested

    @property
    def non_kv(self) -> float:
        return self.weights + self.after_snapshot + self.activation_peak + self.cuda_graphs

    @property
    def available_kv(self) -> float:
        """What vLLM logs as 'Available KV cache memory' (may be negative)."""
        return self.requested - self.non_kv

    @property
    def block_bytes(self) -> float:
        """One KV block on this rank, every layer."""
        return self.block_size * self.kv_bytes_per_token

    @property
    def usable_kv(self) -> float:
        """Available KV less the null block the block pool permanently holds back: what the
        engine core's check and its estimated maximum length plan against
        (`vllm==0.33.0:vllm/v1/core/kv_cache_planning.py` `Reserve the null block BlockPool permanently holds back`)."""
        return self.available_kv - self.block_bytes

    def kv_needed(self, max_model_len: int) -> float:
        """KV for one request of max_model_len tokens, rounded up to whole blocks."""
        return math.ceil(max_model_len / self.block_size) * self.block_bytes

    def max_model_len_that_fits(self) -> int:
        """The longest request the pool holds, the null block left out: whole blocks, as vLLM's
        estimate returns."""
        if self.usable_kv <= 0:
            return 0
        return int(self.usable_kv // self.block_bytes) * self.block_size

    def concurrency(self, max_model_len: int) -> float:
        """'Maximum concurrency for L tokens per request' (0 where the check fails)."""
        if self.check(max_model_len) is not None:
            return 0.0
        return self.available_kv / self.kv_needed(max_model_len)

    def init_check(self, before_snapshot: float) -> str | None:
        """`init_device`'s check, given the memory allocated before the snapshot: None if the free
        memory covers the budget, else the error text of `request_memory`
        (`vllm==0.33.0:vllm/v1/worker/utils.py` `is less than desired GPU memory utilization`)."""
        free = self.total - before_snapshot
        if free >= self.requested:
            return None
        return (f"Free memory on device cuda:0 ({round(free / GiB, 2)}/{round(self.total / GiB, 2)} GiB) on startup "
                f"is less than desired GPU memory utilization ({self.utilization}, "
                f"{round(self.requested / GiB, 2)} GiB). Decrease GPU memory utilization or reduce GPU memory "
                f"used by other processes.")

    def check(self, max_model_len: int) -> str | None:
        """The engine core's check on one rank: None if it passes, else the error text vLLM raises
        (`vllm==0.33.0:vllm/v1/core/kv_cache_planning.py` `def _check_enough_kv_cache_memory(`; GiB as
        its `format_gib` rounds them), against `usable_kv`, as vLLM checks."""
        if not (isinstance(max_model_len, int) and max_model_len >= 1):
            raise ValueError(f"max_model_len must be an integer >= 1, got {max_model_len!r}")
        if self.usable_kv <= 0:
            return ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                    "initializing the engine (this flag also controls CPU memory reservation on the CPU backend, "
                    f"despite its name). {_SEE_DOCS}")
        needed = self.kv_needed(max_model_len)
        if needed <= self.usable_kv:
            return None
        fit = min(self.max_model_len_that_fits(), max_model_len)
        estimate = f"Based on the available memory, the estimated maximum model length is {fit}. " if fit else ""
        return (f"To serve at least one request with the model's max seq len ({max_model_len}), "
                f"({round(needed / GiB, 2)} GiB KV cache is needed, which is larger than the available KV cache "
                f"memory ({round(self.usable_kv / GiB, 2)} GiB). {estimate}Try increasing "
                f"`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or decreasing "
                f"`max_model_len` when initializing the engine. {_SEE_DOCS}")


# What V0 charged outside torch at TP 2 minus what the post-snapshot profile logged: a history-derived
# guess at what the CUDA context, NCCL and cuBLAS hold before the snapshot. Not measured at the pin.
HISTORY_PRE_SNAPSHOT_TP2_BYTES = HISTORY_V0_NON_TORCH_BYTES[2] - LOGGED_NON_TORCH_AFTER_SNAPSHOT_BYTES
