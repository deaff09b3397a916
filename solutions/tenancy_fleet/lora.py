"""LoRA adapters on a shared base: how big they are, what vLLM reserves for them, what they cost a step.

An adapter adds, to each targeted weight W (in -> out), two thin matrices A (rank x in) and
B (out x rank), so it stores rank x (in + out) numbers per targeted projection per layer. vLLM
serves many adapters on one base by keeping `max_loras` GPU *slots*, each a stacked tensor
sized for `max_lora_rank` on every LoRA-capable projection (base_linear.create_lora_weights),
whatever rank and target modules the adapter loaded into it actually has.

    adapter_bytes(model, rank, targets)               one adapter as stored (its safetensors)
    slot_bytes(model, max_lora_rank)                   one vLLM GPU slot (padded, every projection)
    lora_kernels(model, tokens, adapters, rank)        the shrink/expand kernels of one layer
    lora_step_seconds(model, gpu, eff, tokens, ...)    what they add to a step, kernel by kernel
    memset_kernels(model, tokens, rank)                the zeroing of each shrink buffer (vLLM 0.33.0)
    lora_path_seconds(model, gpu, eff, tokens, ...)    vLLM's whole LoRA path: memset, shrink, expand
                                                       per wrapped layer (what q26 and q32 price)
"""

from __future__ import annotations

from solutions.hardware import DTYPE_BYTES
from solutions.models import Model
from solutions.hardware import GPU
from solutions.roofline import Efficiency, StepCost, kernel_time

QV = ("q_proj", "v_proj")
ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
ALL_LINEAR = ATTENTION + ("gate_proj", "up_proj", "down_proj")


def projections(model: Model) -> dict[str, tuple[int, int]]:
    """(in, out) features of each linear projection of one transformer layer (Llama layout)."""
    if model.num_experts != 1 or model.mamba_layers or not model.gated_mlp:
        raise ValueError(f"{model.name}: only dense gated-MLP transformers are laid out here")
    h, q, kv, i = model.hidden_size, model.num_heads * model.head_dim, model.num_kv_heads * model.head_dim, model.intermediate_size
    return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
            "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h)}


def _width(model: Model, targets) -> int:
    """Sum of (in + out) over the targeted projections of one layer."""
    shapes = projections(model)
    targets = tuple(targets)
    unknown = [t for t in targets if t not in shapes]
    if unknown or not targets:
        raise ValueError(f"targets must be a non-empty subset of {tuple(shapes)}, got {targets}")
    return sum(sum(shapes[t]) for t in targets)


def _check_rank(rank) -> None:
    if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
        raise ValueError(f"rank must be a positive integer, got {rank!r}")


def adapter_params(model: Model, rank: int, targets=ALL_LINEAR) -> int:
    """Numbers stored by one adapter: layers x rank x sum(in + out) over its target projections."""
    _check_rank(rank)
    return model.num_layers * rank * _width(model, targets)


def adapter_bytes(model: Model, rank: int, targets=ALL_LINEAR, dtype: str = "bf16") -> float:
    return adapter_params(model, rank, targets) * DTYPE_BYTES[dtype]


def slot_bytes(model: Model, max_lora_rank: int, dtype: str = "bf16", wrapped=ALL_LINEAR) -> float:
    """GPU memory of ONE vLLM LoRA slot: every wrapped projection gets A (max_lora_rank x in) and
    B (out x max_lora_rank), whatever the loaded adapter's own rank and targets. vLLM wraps every
    LoRA-capable projection unless a deployment target filter says otherwise; summed over the
    tensor-parallel group (each GPU holds its shard of the larger side)."""
    return adapter_bytes(model, max_lora_rank, wrapped, dtype)


# vLLM's LoRA-wrapped layers of a Llama block: packed projections share one input, so one shrink kernel
# reads it once for all their slices (QKVParallelLinearWithLoRA, MergedColumnParallelLinearWithLoRA).
WRAPPED_GROUPS = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "o_proj": ("o_proj",),
                  "gate_up_proj": ("gate_proj", "up_proj"), "down_proj": ("down_proj",)}


def lora_kernels(model: Model, tokens: int, adapters: int, rank: int, dtype: str = "bf16") -> dict[str, StepCost]:
    """The LoRA kernels of ONE layer, Punica/SGMV style: per wrapped layer a shrink (x A^T, every
    slice) and an expand (. B^T, added into the base output). Each distinct adapter's A and B are
    read once; every token pays FLOPs, re-reads its input, and writes and reads the rank-wide
    intermediate and the output it adds into. Names are '<layer>.shrink' and '<layer>.expand'."""
    _check_rank(rank)
    if not (isinstance(tokens, int) and tokens >= 1 and isinstance(adapters, int) and 1 <= adapters <= tokens):
        raise ValueError(f"need tokens >= 1 and 1 <= adapters <= tokens, got tokens={tokens!r}, adapters={adapters!r}")
    b = DTYPE_BYTES[dtype]
    shapes = projections(model)
    out = {}
    for layer, members in WRAPPED_GROUPS.items():
        n_in = shapes[members[0]][0]
        n_out = sum(shapes[m][1] for m in members)
        slices = len(members)
        out[f"{layer}.shrink"] = StepCost(flops=2.0 * tokens * rank * n_in * slices,
                                          weight_bytes=adapters * slices * rank * n_in * b,
                                          activation_bytes=tokens * (n_in + slices * rank) * b, tokens=tokens)
        out[f"{layer}.expand"] = StepCost(flops=2.0 * tokens * rank * n_out,
                                          weight_bytes=adapters * rank * n_out * b,
                                          activation_bytes=tokens * (slices * rank + 2 * n_out) * b, tokens=tokens)
    return out


def lora_step_cost(model: Model, tokens: int, adapters: int, rank: int, dtype: str = "bf16") -> StepCost:
    """All LoRA kernels of one step, summed over layers (for bytes and FLOPs; time them per kernel)."""
    kernels = lora_kernels(model, tokens, adapters, rank, dtype).values()  # different weights: their bytes add
    layers = model.num_layers
    return StepCost(flops=layers * sum(c.flops for c in kernels), weight_bytes=layers * sum(c.weight_bytes for c in kernels),
                    activation_bytes=layers * sum(c.activation_bytes for c in kernels), tokens=tokens)


def lora_step_seconds(model: Model, gpu: GPU, eff: Efficiency, tokens: int, adapters: int, rank: int,
                      dtype: str = "bf16") -> float:
    """Seconds the LoRA kernels add to a step: each kernel at its own roofline (`eff`: use the step
    model's fitted GEMM efficiency), with its per-launch floor, times the layers."""
    kernels = lora_kernels(model, tokens, adapters, rank, dtype)
    return model.num_layers * sum(kernel_time(c, gpu, eff) for c in kernels.values())


def memset_kernels(model: Model, tokens: int, rank: int) -> dict[str, StepCost]:
    """The third launch per wrapped layer in vLLM 0.33.0: `add_lora_linear` allocates an fp32 buffer
    (slices x tokens x max_lora_rank) and the shrink op zeroes it (`output_tensor.zero_()`) before
    its kernel. Priced as a kernel that writes the buffer. Names are '<layer>.memset'."""
    _check_rank(rank)
    if not (isinstance(tokens, int) and tokens >= 1):
        raise ValueError(f"need tokens >= 1, got {tokens!r}")
    return {f"{layer}.memset": StepCost(activation_bytes=len(members) * tokens * rank * 4, tokens=tokens)
            for layer, members in WRAPPED_GROUPS.items()}


def lora_path_seconds(model: Model, gpu: GPU, eff: Efficiency, tokens: int, adapters: int, rank: int,
                      dtype: str = "bf16") -> float:
    """Seconds vLLM 0.33.0's LoRA path adds to a step: per wrapped layer a memset, a shrink and an
    expand (12 launches per Llama layer), each at its own roofline with its per-launch floor. `rank`
    is the slot width (`max_lora_rank`): the kernels run over it whatever rank the adapter has."""
    zeroing = sum(kernel_time(c, gpu, eff) for c in memset_kernels(model, tokens, rank).values())
    return lora_step_seconds(model, gpu, eff, tokens, adapters, rank, dtype) + model.num_layers * zeroing
