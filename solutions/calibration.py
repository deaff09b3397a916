"""The roofline, calibrated against measured A100 kernels (q03 derives and checks it).

The textbook roofline prices a kernel at datasheet peak. Measured kernels differ in three
named ways, and each becomes one factor of a kit `Efficiency`:
  - `compute`: the fraction of peak FLOP/s a compute-bound kernel reaches;
  - `memory`: the fraction of peak HBM bandwidth a memory-bound kernel reaches;
  - `overhead_s`: a fixed floor *per kernel* (launch, prologue, the last partial wave).
GEMMs, paged decode attention and the small elementwise kernels reach different fractions,
so `CalibratedEfficiency` holds one `Efficiency` per kernel class. A step runs hundreds of
kernels, so a per-kernel floor cannot live in a single per-step `overhead_s`;
`CalibratedEfficiency.for_model` folds it in for one model when a plain `Efficiency` is wanted.

What is predicted is *kernel time*, the quantity the profiles measure: CPU launch gaps,
sampling, scheduling and tensor-parallel all-reduce are not in it (q03 lists them).
The fit runs on some models and is checked on others (`held_out_summary`).

Use: `decode_step_time(model, batch, context_len, tp)` and `prefill_time(model, tokens,
sequences, tp)` for calibrated A100 kernel seconds; `A100_FIT.gemm` is the plain `Efficiency`
of the big matmuls; `A100_FIT.for_model(model)` is one `Efficiency` for `roofline.step_time`.
Other GPUs: no measurements here, so carrying these fractions over is an assumption to state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from statistics import median

import numpy as np

from solutions import fidelity_a100 as data
from solutions.hardware import A100_80GB_SXM, DTYPE_BYTES, GPU
from solutions.models import Model
from solutions.roofline import IDEAL, Efficiency, StepCost, attention_flops, step_time

GEMMS_PER_LAYER = 4  # fused QKV, attention output, fused gate+up, down (the profiles' four linear ops)
ELEMENTWISE_PER_LAYER = 5  # RoPE, SiLU-and-mul, two RMSNorms, residual add (the profiles' small ops)
FP16 = "fp16"

# The split: fit on four models, check on the two Llama 3 models the kit's own Llama 3.x share
# shapes with. Attention: fit on contexts up to 2,112 tokens, check on the longer ones.
HELD_OUT_MODELS = ("meta-llama/Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-70B")
ATTENTION_HELD_OUT_FROM_CONTEXT = 2688
DECODE_MAX_TOKENS = 256  # GEMM rows up to this many tokens are decode-sized batches; above, prefill chunks


@dataclass(frozen=True)
class CalibratedEfficiency:
    """One `Efficiency` per kernel class; each `overhead_s` is a floor paid per kernel launch."""

    gemm: Efficiency
    attention: Efficiency
    elementwise: Efficiency
    source: str

    def for_model(self, model: Model) -> Efficiency:
        """A single `Efficiency` for `roofline.step_time`: the GEMM fractions, and every
        kernel floor of one step (all layers plus the LM head) summed into `overhead_s`.
        Coarser than `decode_step_time` (attention is priced at the GEMM fractions)."""
        _check_dense(model)
        floors = model.num_layers * (
            GEMMS_PER_LAYER * self.gemm.overhead_s
            + self.attention.overhead_s
            + ELEMENTWISE_PER_LAYER * self.elementwise.overhead_s
        ) + self.gemm.overhead_s
        return Efficiency(compute=self.gemm.compute, memory=self.gemm.memory, overhead_s=floors)


# Fitted by `fit_a100()` on the training split (tests/test_calibration.py re-runs the fit and
# checks these values, and the held-out errors, against the data in solutions/fidelity_a100.py).
A100_FIT = CalibratedEfficiency(
    gemm=Efficiency(compute=0.71, memory=0.78, overhead_s=6.0e-6),
    attention=Efficiency(compute=0.71, memory=0.83, overhead_s=17.0e-6),
    elementwise=Efficiency(compute=1.0, memory=0.56, overhead_s=4.5e-6),
    source="fit_a100(): least squares in log time on Vidur's A100 profiles (solutions/fidelity_a100.py), "
    "GEMMs on Llama-2 7B/70B, CodeLlama-34B, Qwen-72B at TP 1-8; decode attention on contexts <= 2,112; "
    "attention compute (no prefill-attention profile) set to the GEMM fraction",
)


# ---- what one layer must do, on one tensor-parallel shard ---------------------------------
def linear_params_per_layer(model: Model) -> float:
    """Matmul weights of one decoder layer (QKV, output, gate/up, down): the layer's
    parameters less its two RMSNorm vectors."""
    _check_dense(model)
    return model.attention_params_per_layer + model.mlp_params_per_layer() - 2 * model.hidden_size


def gemm_layer_cost(model: Model, tokens: int, tp: int = 1, weight_dtype: str = FP16) -> StepCost:
    """The four linear ops of one layer on one shard: 2 FLOP per weight per token; bytes are
    the shard's weights plus each GEMM's fp16 input read and output written once.
    `weight_dtype` other than fp16 means weight-only quantisation (math stays fp16: the A100
    has no FP8 tensor cores); the profiles measure fp16 only, so its efficiency is assumed."""
    _check_positive(tokens=tokens, tp=tp)
    _check_dtype(weight_dtype=weight_dtype)
    params = linear_params_per_layer(model) / tp
    h, q, kv, ff = _widths(model)
    # inputs h (QKV), q/tp (out proj), h (gate/up), ff/tp (down); outputs (q+2kv)/tp, h, 2ff/tp, h
    activations = tokens * DTYPE_BYTES[FP16] * (4 * h + (2 * q + 2 * kv + 3 * ff) / tp)
    return StepCost(flops=2.0 * tokens * params, weight_bytes=params * DTYPE_BYTES[weight_dtype],
                    activation_bytes=activations, tokens=tokens)


def attention_decode_cost(model: Model, batch: int, context_len: float, tp: int = 1,
                          kv_dtype: str = FP16) -> StepCost:
    """Paged decode attention of one layer on one shard: read every cached K and V once."""
    _check_positive(batch=batch, context_len=context_len, tp=tp)
    _check_dtype(kv_dtype=kv_dtype)
    one_layer = model.kv_bytes_per_token(kv_dtype) / model.n_attention
    flops = batch * attention_flops(model, 1, context_len) / model.n_attention
    return StepCost(flops=flops / tp, kv_read_bytes=batch * context_len * one_layer / tp, tokens=batch)


def attention_prefill_cost(model: Model, tokens: int, sequences: int = 1, tp: int = 1,
                           cached_tokens: int = 0, kv_dtype: str = FP16) -> StepCost:
    """Causal self-attention of one layer for `tokens` new prompt tokens per sequence on top of
    `cached_tokens` already cached (a prefix-cache hit): quadratic FLOPs; reads Q, K, V and the
    cached K, V once and writes the output (FlashAttention never materialises the scores)."""
    _check_positive(tokens=tokens, sequences=sequences, tp=tp)
    if cached_tokens < 0:
        raise ValueError(f"cached_tokens must be >= 0, got {cached_tokens}")
    _check_dtype(kv_dtype=kv_dtype)
    h, q, kv, ff = _widths(model)
    flops = sequences * attention_flops(model, tokens, cached_tokens) / model.n_attention
    io = sequences * tokens * DTYPE_BYTES[FP16] * (2 * q + 2 * kv)
    cached = sequences * cached_tokens * model.kv_bytes_per_token(kv_dtype) / model.n_attention
    return StepCost(flops=flops / tp, activation_bytes=io / tp, kv_read_bytes=cached / tp,
                    tokens=sequences * tokens)


def elementwise_layer_cost(model: Model, tokens: int, tp: int = 1) -> StepCost:
    """RoPE, SiLU-and-mul, two RMSNorms and a residual add: no matmul, a few activation
    passes. Norms and add see the full hidden state on every shard; RoPE and SiLU a shard's."""
    _check_positive(tokens=tokens, tp=tp)
    h, q, kv, ff = _widths(model)
    per_token = 4 * h + 3 * h + (2 * (q + kv) + 3 * ff) / tp
    return StepCost(activation_bytes=tokens * DTYPE_BYTES[FP16] * per_token, tokens=tokens)


def lm_head_cost(model: Model, positions: int, tp: int = 1) -> StepCost:
    """The vocabulary projection for the positions that sample (vocab split across shards)."""
    _check_positive(positions=positions, tp=tp)
    params = model.embedding_params / tp
    return StepCost(flops=2.0 * positions * params, weight_bytes=params * DTYPE_BYTES[FP16],
                    activation_bytes=positions * DTYPE_BYTES[FP16] * (model.hidden_size + model.vocab_size / tp),
                    tokens=positions)


# ---- kernel and step times -----------------------------------------------------------------
def kernel_time(cost: StepCost, eff: Efficiency, kernels: int = 1, gpu: GPU = A100_80GB_SXM) -> float:
    """Seconds for `kernels` launches that together do `cost`: the roofline at `eff`'s
    fractions plus `eff.overhead_s` per launch."""
    return step_time(cost, gpu, replace(eff, overhead_s=kernels * eff.overhead_s), FP16)


def decode_step_time(model: Model, batch: int, context_len: float, tp: int = 1,
                     fit: CalibratedEfficiency = A100_FIT, gpu: GPU = A100_80GB_SXM,
                     weight_dtype: str = FP16, kv_dtype: str = FP16) -> float:
    """Kernel seconds of one decode step on each of `tp` GPUs: every layer's GEMMs, paged
    attention and elementwise kernels, then the LM head. No CPU gaps, no all-reduce.
    `context_len` is the mean cached tokens per sequence (attention time is linear in it)."""
    _check_dense(model)
    _check_positive(batch=batch, context_len=context_len, tp=tp)
    layer = (
        kernel_time(gemm_layer_cost(model, batch, tp, weight_dtype), fit.gemm, GEMMS_PER_LAYER, gpu)
        + kernel_time(attention_decode_cost(model, batch, context_len, tp, kv_dtype), fit.attention, 1, gpu)
        + kernel_time(elementwise_layer_cost(model, batch, tp), fit.elementwise, ELEMENTWISE_PER_LAYER, gpu)
    )
    return model.num_layers * layer + kernel_time(lm_head_cost(model, batch, tp), fit.gemm, 1, gpu)


def prefill_time(model: Model, tokens: int, sequences: int = 1, tp: int = 1,
                 fit: CalibratedEfficiency = A100_FIT, gpu: GPU = A100_80GB_SXM,
                 cached_tokens: int = 0, weight_dtype: str = FP16, kv_dtype: str = FP16) -> float:
    """Kernel seconds to prefill `sequences` prompts of `tokens` new tokens each in one step on
    each of `tp` GPUs, on top of `cached_tokens` per prompt already in the KV cache (a
    prefix-cache hit: those tokens cost only attention reads), with each prompt's first logits."""
    _check_dense(model)
    _check_positive(tokens=tokens, sequences=sequences, tp=tp)
    n = tokens * sequences
    layer = (
        kernel_time(gemm_layer_cost(model, n, tp, weight_dtype), fit.gemm, GEMMS_PER_LAYER, gpu)
        + kernel_time(attention_prefill_cost(model, tokens, sequences, tp, cached_tokens, kv_dtype),
                      fit.attention, 1, gpu)
        + kernel_time(elementwise_layer_cost(model, n, tp), fit.elementwise, ELEMENTWISE_PER_LAYER, gpu)
    )
    return model.num_layers * layer + kernel_time(lm_head_cost(model, sequences, tp), fit.gemm, 1, gpu)


# ---- the measured points, as the kit models them -------------------------------------------
def profiled_model(shape: data.LayerShape) -> Model:
    """A profiled layer as a one-layer kit `Model`, so the kit's own formulas cost it."""
    return Model(name=shape.model, hf_id=shape.model, num_layers=1, hidden_size=shape.hidden,
                 num_heads=shape.heads, num_kv_heads=shape.kv_heads, head_dim=shape.head_dim,
                 intermediate_size=shape.intermediate, vocab_size=shape.vocab,
                 tie_word_embeddings=False, source=shape.source)


@dataclass(frozen=True)
class Point:
    """One measured time beside what the kit predicts for it."""

    kind: str  # one of KERNEL_KINDS or LAYER_KINDS
    model: str
    tp: int
    tokens: int  # tokens in the batch (for decode, and for attention, the number of sequences)
    context_len: int  # attention only (0 otherwise)
    measured_s: float
    naive_s: float  # the textbook roofline: peak FLOP/s and bandwidth, no floors
    calibrated_s: float
    held_out: bool
    source: str

    @property
    def naive_error(self) -> float:
        return self.naive_s / self.measured_s - 1

    @property
    def calibrated_error(self) -> float:
        return self.calibrated_s / self.measured_s - 1

    def __add__(self, other: "Point") -> "Point":
        """Kernels of one layer run back to back: times add."""
        return replace(self, measured_s=self.measured_s + other.measured_s, naive_s=self.naive_s + other.naive_s,
                       calibrated_s=self.calibrated_s + other.calibrated_s)


KERNEL_KINDS = ("GEMMs", "elementwise", "decode attention")
LAYER_KINDS = ("decode layer", "prefill layer", "decode attention")


def _measured(kind: str, model: str, tp: int, tokens: int, context_len: int, measured_s: float,
              cost: StepCost, eff: Efficiency, kernels: int, held_out: bool, source: str) -> Point:
    return Point(kind, model, tp, tokens, context_len, measured_s, kernel_time(cost, IDEAL, kernels),
                 kernel_time(cost, eff, kernels), held_out, source)


def points(fit: CalibratedEfficiency = A100_FIT) -> list[Point]:
    """Every measured kernel time, with the naive and the calibrated prediction: a layer's four
    GEMMs, its five elementwise kernels, and each decode-attention kernel."""
    out = []
    for r in data.LINEAR:
        model, held_out = profiled_model(r.shape), r.model in HELD_OUT_MODELS
        out.append(_measured("GEMMs", r.model, r.tp, r.num_tokens, 0, r.linear_total_ms * 1e-3,
                             gemm_layer_cost(model, r.num_tokens, r.tp), fit.gemm, GEMMS_PER_LAYER,
                             held_out, r.source))
        out.append(_measured("elementwise", r.model, r.tp, r.num_tokens, 0, _elementwise_ms(r) * 1e-3,
                             elementwise_layer_cost(model, r.num_tokens, r.tp), fit.elementwise,
                             ELEMENTWISE_PER_LAYER, held_out, r.source))
    for r in data.ATTENTION_DECODE:
        out.append(_measured("decode attention", r.model, 1, r.batch_size, r.kv_cache_size,
                             r.attn_decode_median_ms * 1e-3,
                             attention_decode_cost(profiled_model(r.shape), r.batch_size, r.kv_cache_size),
                             fit.attention, 1, r.kv_cache_size >= ATTENTION_HELD_OUT_FROM_CONTEXT, r.source))
    return out


def layer_points(fit: CalibratedEfficiency = A100_FIT) -> list[Point]:
    """What a step is made of: one layer's GEMMs plus elementwise kernels ("decode layer" up to
    DECODE_MAX_TOKENS tokens, "prefill layer" above), and the decode-attention kernels.
    A step is num_layers of these plus the LM head (see `decode_step_time`)."""
    kernels = points(fit)
    gemms = [p for p in kernels if p.kind == "GEMMs"]
    small = [p for p in kernels if p.kind == "elementwise"]
    layers = [replace(g + e, kind="decode layer" if g.tokens <= DECODE_MAX_TOKENS else "prefill layer")
              for g, e in zip(gemms, small, strict=True)]
    return layers + [p for p in kernels if p.kind == "decode attention"]


@dataclass(frozen=True)
class ErrorSummary:
    """Median and worst |relative error| of a set of points."""

    n: int
    median: float
    worst: float
    worst_point: Point


def summarise(pts: list[Point], naive: bool = False) -> ErrorSummary:
    if not pts:
        raise ValueError("summarise needs at least one point")
    err = [abs(p.naive_error if naive else p.calibrated_error) for p in pts]
    worst = max(range(len(pts)), key=err.__getitem__)
    return ErrorSummary(len(pts), median(err), err[worst], pts[worst])


def held_out_summary(fit: CalibratedEfficiency = A100_FIT, naive: bool = False) -> dict[str, ErrorSummary]:
    """Error on the points the fit never saw, per layer kind and over all of them
    (`naive=True`: the same points under the textbook roofline)."""
    test = [p for p in layer_points(fit) if p.held_out]
    out = {kind: summarise([p for p in test if p.kind == kind], naive) for kind in LAYER_KINDS}
    out["all held out"] = summarise(test, naive)
    return out


# ---- the fit ---------------------------------------------------------------------------------
def fit_efficiency(costs: list[StepCost], measured_s: list[float], kernels: int,
                   compute_grid, memory_grid, floor_grid_s, gpu: GPU = A100_80GB_SXM) -> Efficiency:
    """The grid point minimising mean squared log(predicted / measured): relative error, so a
    10 us kernel counts as much as a 60 ms one. A grid (not a solver) keeps it exact and stable."""
    flops = np.array([c.flops for c in costs])[:, None, None]
    moved = np.array([c.bytes for c in costs])[:, None, None]
    y = np.array(measured_s)[:, None, None]
    m = np.asarray(memory_grid, dtype=float)[None, :, None]
    f = np.asarray(floor_grid_s, dtype=float)[None, None, :]
    best = None
    for c in compute_grid:  # one compute fraction at a time keeps memory small
        pred = np.maximum(flops / (gpu.peak_flops(FP16) * c), moved / (gpu.hbm_bytes_per_s * m)) + kernels * f
        loss = np.mean(np.log(pred / y) ** 2, axis=0)
        j, k = np.unravel_index(np.argmin(loss), loss.shape)
        if best is None or loss[j, k] < best[0]:
            best = (loss[j, k], float(c), float(m[0, j, 0]), float(f[0, 0, k]))
    _, c, m, f = best
    return Efficiency(compute=round(c, 4), memory=round(m, 4), overhead_s=round(f, 9))


FRACTIONS = np.round(np.arange(0.40, 1.0001, 0.01), 2)
FLOORS_S = np.round(np.arange(0.0, 30.0001, 0.5), 1) * 1e-6


def fit_a100() -> CalibratedEfficiency:
    """Re-derive `A100_FIT` from the training split of solutions/fidelity_a100.py."""
    train = [r for r in data.LINEAR if r.model not in HELD_OUT_MODELS]
    gemm = fit_efficiency([gemm_layer_cost(profiled_model(r.shape), r.num_tokens, r.tp) for r in train],
                          [r.linear_total_ms * 1e-3 for r in train], GEMMS_PER_LAYER,
                          FRACTIONS, FRACTIONS, FLOORS_S)
    # decode attention never turns compute-bound, so its compute fraction is not identifiable:
    # pin it to the GEMMs' and fit bandwidth and floor only
    att_train = [r for r in data.ATTENTION_DECODE if r.kv_cache_size < ATTENTION_HELD_OUT_FROM_CONTEXT]
    attention = fit_efficiency([attention_decode_cost(profiled_model(r.shape), r.batch_size, r.kv_cache_size)
                                for r in att_train], [r.attn_decode_median_ms * 1e-3 for r in att_train], 1,
                               [gemm.compute], FRACTIONS, FLOORS_S)
    # elementwise kernels do no matmul: fit their bandwidth fraction and floor
    elementwise = fit_efficiency([elementwise_layer_cost(profiled_model(r.shape), r.num_tokens, r.tp)
                                  for r in train], [_elementwise_ms(r) * 1e-3 for r in train],
                                 ELEMENTWISE_PER_LAYER, [1.0], FRACTIONS, FLOORS_S)
    return CalibratedEfficiency(gemm, attention, elementwise, A100_FIT.source)


def _elementwise_ms(r: data.LinearRow) -> float:
    return r.attn_rope_ms + r.mlp_act_ms + r.input_layernorm_ms + r.post_attention_layernorm_ms + r.add_ms


def _widths(model: Model) -> tuple[int, int, int, int]:
    """Hidden size, query width, one of K/V's width, MLP width."""
    return (model.hidden_size, model.num_heads * model.head_dim,
            model.num_kv_heads * model.head_dim, model.intermediate_size)


def _check_dense(model: Model):
    if model.num_experts > 1 or model.mamba_layers or model.n_attention != model.num_layers:
        raise ValueError(f"model {model.name!r}: the calibration covers dense transformer layers only")


def _check_dtype(**values):
    for name, value in values.items():
        if value not in DTYPE_BYTES:
            raise ValueError(f"{name} must be one of {sorted(DTYPE_BYTES)}, got {value!r}")


def _check_positive(**values):
    for name, value in values.items():
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")
