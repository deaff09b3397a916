"""LoRA adapters on a shared base: how big they are, what vLLM reserves for them, what they cost a step.

An adapter adds, to each targeted weight W (in -> out), two thin matrices A (rank x in) and
B (out x rank), so it stores rank x (in + out) numbers per targeted projection per layer. vLLM
serves many adapters on one base by keeping `max_loras` GPU *slots*, each a stacked tensor
sized for `max_lora_rank` on every LoRA-capable projection (base_linear.create_lora_weights),
whatever rank and target modules the adapter loaded into it actually has.

    adapter_bytes(model, rank, targets)               one adapter as stored (its safetensors)
    slot_bytes(model, max_lora_rank)                   one vLLM GPU slot (padded, every projection)
    lora_step_cost(model, tokens, adapters, rank)      the extra shrink/expand work of one step
"""

from __future__ import annotations

from solutions.hardware import DTYPE_BYTES
from solutions.models import Model
from solutions.roofline import StepCost

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


def lora_step_cost(model: Model, tokens: int, adapters: int, rank: int, targets=ALL_LINEAR,
                   dtype: str = "bf16") -> StepCost:
    """Work the LoRA kernels add to one step of `tokens` tokens that use `adapters` distinct
    adapters (grouped shrink x A^T then expand (.) B^T kernels, Punica SGMV style): each distinct
    adapter's A and B are read once; every token pays its FLOPs and re-reads its input activation,
    writes and reads a rank-wide intermediate, and reads and writes the output it adds into."""
    _check_rank(rank)
    if not (isinstance(tokens, int) and tokens >= 1 and isinstance(adapters, int) and 1 <= adapters <= tokens):
        raise ValueError(f"need tokens >= 1 and 1 <= adapters <= tokens, got tokens={tokens!r}, adapters={adapters!r}")
    b = DTYPE_BYTES[dtype]
    shapes = projections(model)
    width = _width(model, targets)
    io = sum(shapes[t][0] + 2 * rank + 2 * shapes[t][1] for t in targets)
    L = model.num_layers
    return StepCost(
        flops=2.0 * tokens * rank * width * L,
        weight_bytes=adapters * rank * width * L * b,
        activation_bytes=tokens * io * L * b,
        tokens=tokens,
    )
