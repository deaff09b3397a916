"""The roofline, calibrated against measured A100 kernels (q03 derives and checks it).

The textbook roofline prices a kernel at datasheet peak. Measured kernels differ in three
named ways, and each becomes one factor of a kit `Efficiency`:
  - `compute`: the fraction of peak FLOP/s a compute-bound kernel reaches;
  - `memory`: the fraction of peak HBM bandwidth a memory-bound kernel reaches;
  - `overhead_s`: a fixed floor *per kernel* (launch, prologue, the last partial wave).
GEMMs, paged decode attention and the small elementwise kernels reach different fractions,
so `CalibratedEfficiency` holds one `Efficiency` per kernel class. A step runs hundreds of
kernels, so a per-kernel floor cannot live in a single per-step overhead.

What is predicted is *kernel time*, the quantity the profiles measure: CPU launch gaps,
sampling, scheduling and tensor-parallel all-reduce are not in it (q03 lists them).
The fit runs on some models and is checked on others (`held_out_summary`).

The fit is what `solutions.step_model.StepModel` prices kernels with; this module holds the
measured points, the fit and the error summaries (q03, docs/fidelity.ipynb). Other GPUs: no
measurements here, so carrying these fractions over is an assumption to state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from statistics import median

import numpy as np

from solutions.calibration import a100_profiles as data
from solutions.calibration import h100_profiles as h100_data
from solutions.hardware import A100_80GB_SXM, GPU, H100_SXM
from solutions.models import Model
from solutions.roofline import IDEAL, Efficiency, StepCost, kernel_time as roofline_kernel_time
from solutions.step_defaults import A100_FIT, HOPPER_FIT
from solutions.step_model import (GEMMS_PER_LAYER, KernelFit, StepShape, attention_layer_cost,
                                  elementwise_layer_cost, elementwise_layer_s, elementwise_rows, gemm_layer_cost,
                                  linear_params_per_layer)

FP16 = "fp16"

# The split is by layer shape: fit on Llama-2 7B, CodeLlama-34B and Qwen-72B; check on the two
# Llama 3 models the kit's own Llama 3.x share shapes with, and on Llama-2-70B, whose layers are
# Llama-3-70B's (a shape in both halves would make the check look better than it is).
# Attention: fit on contexts up to 2,112 tokens, check on the longer ones.
HELD_OUT_MODELS = ("meta-llama/Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-70B", "meta-llama/Llama-2-70b-hf")
ATTENTION_HELD_OUT_FROM_CONTEXT = 2688
DECODE_MAX_TOKENS = 256  # GEMM rows up to this many tokens are decode-sized batches; above, prefill chunks


CalibratedEfficiency = KernelFit  # one Efficiency per kernel class (the step model's fit)




# ---- kernel times ----------------------------------------------------------------------------
def kernel_time(cost: StepCost, eff: Efficiency, kernels: int = 1, gpu: GPU = A100_80GB_SXM) -> float:
    """Seconds for `kernels` launches that together do `cost`: the roofline at `eff`'s
    fractions plus `eff.overhead_s` per launch."""
    return float(roofline_kernel_time(cost, gpu, replace(eff, overhead_s=kernels * eff.overhead_s), FP16))


def attention_decode_cost(model: Model, batch: int, context_len: float, tp: int = 1) -> StepCost:
    """One layer's paged decode attention: `batch` sequences over `context_len` cached tokens."""
    return attention_layer_cost(model, StepShape.decode(batch, context_len), tp)


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
              cost: StepCost, eff: Efficiency, kernels: int, held_out: bool, source: str,
              gpu: GPU = A100_80GB_SXM) -> Point:
    return Point(kind, model, tp, tokens, context_len, measured_s, kernel_time(cost, IDEAL, kernels, gpu),
                 kernel_time(cost, eff, kernels, gpu), held_out, source)


def _elementwise_point(r, model: Model, eff: Efficiency, held_out: bool, gpu: GPU) -> Point:
    """A layer's five measured elementwise kernels beside the step model's price for them (each
    kernel at its own bound: bandwidth, or one token's row)."""
    return Point("elementwise", r.model, r.tp, r.num_tokens, 0, _elementwise_ms(r) * 1e-3,
                 float(elementwise_layer_s(model, r.num_tokens, r.tp, IDEAL, gpu)),
                 float(elementwise_layer_s(model, r.num_tokens, r.tp, eff, gpu)), held_out, r.source)


def points(fit: CalibratedEfficiency = A100_FIT) -> list[Point]:
    """Every measured kernel time, with the naive and the calibrated prediction: a layer's four
    GEMMs, its five elementwise kernels, and each decode-attention kernel."""
    out = []
    for r in data.LINEAR:
        model, held_out = profiled_model(r.shape), r.model in HELD_OUT_MODELS
        out.append(_measured("GEMMs", r.model, r.tp, r.num_tokens, 0, r.linear_total_ms * 1e-3,
                             gemm_layer_cost(model, r.num_tokens, r.tp), fit.gemm, GEMMS_PER_LAYER,
                             held_out, r.source))
        out.append(_elementwise_point(r, model, fit.elementwise, held_out, A100_80GB_SXM))
    for r in data.ATTENTION_DECODE:
        out.append(_measured("decode attention", r.model, 1, r.batch_size, r.kv_cache_size,
                             r.attn_decode_median_ms * 1e-3,
                             attention_decode_cost(profiled_model(r.shape), r.batch_size, r.kv_cache_size),
                             fit.attention, 1, r.kv_cache_size >= ATTENTION_HELD_OUT_FROM_CONTEXT, r.source))
    return out


def layer_points(fit: CalibratedEfficiency = A100_FIT) -> list[Point]:
    """What a step is made of: one layer's GEMMs plus elementwise kernels ("decode layer" up to
    DECODE_MAX_TOKENS tokens, "prefill layer" above), and the decode-attention kernels.
    A step is num_layers of these plus the LM head (see `solutions.step_model`)."""
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


def fit_layer_kernels(rows, gpu: GPU = A100_80GB_SXM) -> tuple[Efficiency, Efficiency]:
    """The GEMM and elementwise `Efficiency` that best fit measured layer rows (a `LinearRow` per
    model, TP and token count) priced on `gpu`: shared by the A100 and the Hopper fits."""
    gemm = fit_efficiency([gemm_layer_cost(profiled_model(r.shape), r.num_tokens, r.tp) for r in rows],
                          [r.linear_total_ms * 1e-3 for r in rows], GEMMS_PER_LAYER,
                          FRACTIONS, FRACTIONS, FLOORS_S, gpu)
    return gemm, fit_elementwise(rows, gpu)


ROW_BANDWIDTHS = np.round(np.arange(2.0, 30.001, 0.1), 1) * 1e9  # bytes/s one block moves on one row
ELEMENTWISE_FLOORS_S = np.round(np.arange(0.0, 10.0001, 0.5), 1) * 1e-6


def fit_elementwise(rows, gpu: GPU = A100_80GB_SXM) -> Efficiency:
    """The elementwise `Efficiency` (HBM fraction, per-kernel floor, per-row bandwidth) minimising
    mean squared log error on measured layer sums of the five kernels. They do no matmul, so no
    compute fraction. The row term is what the profiles show at decode sizes: at 1-64 tokens a
    kernel's time follows its row's bytes (SiLU-and-mul halves from TP 1 to 2, the norms do not
    move), not the batch's bytes."""
    kernels = [elementwise_rows(profiled_model(r.shape), r.tp) for r in rows]
    t = np.array([r.num_tokens for r in rows], dtype=float)[:, None, None]
    slope = np.array([[n * b for n, b in k] for k in kernels])[:, :, None] * t / gpu.hbm_bytes_per_s  # at m = 1
    row = np.array([[b for _, b in k] for k in kernels])[:, :, None]
    y = np.array([_elementwise_ms(r) * 1e-3 for r in rows])[:, None, None]
    m = FRACTIONS[None, None, :]
    floors = slope.shape[1] * ELEMENTWISE_FLOORS_S[None, None, :]
    best = None
    for r_bw in ROW_BANDWIDTHS:  # one row bandwidth at a time keeps memory small
        pred = np.maximum(slope / m, row / r_bw).sum(axis=1)[:, :, None] + floors
        loss = np.mean(np.log(pred / y) ** 2, axis=0)
        j, k = np.unravel_index(np.argmin(loss), loss.shape)
        if best is None or loss[j, k] < best[0]:
            best = (loss[j, k], float(FRACTIONS[j]), float(ELEMENTWISE_FLOORS_S[k]), float(r_bw))
    _, mem, floor, r_bw = best
    return Efficiency(compute=1.0, memory=round(mem, 4), overhead_s=round(floor, 9), row_bytes_per_s=r_bw)


def fit_a100() -> CalibratedEfficiency:
    """Re-derive `A100_FIT` from the training split of solutions/calibration/a100_profiles.py."""
    gemm, elementwise = fit_layer_kernels([r for r in data.LINEAR if r.model not in HELD_OUT_MODELS])
    # decode attention never turns compute-bound, so its compute fraction is not identifiable:
    # pin it to the GEMMs' and fit bandwidth and floor only
    att_train = [r for r in data.ATTENTION_DECODE if r.kv_cache_size < ATTENTION_HELD_OUT_FROM_CONTEXT]
    attention = fit_efficiency([attention_decode_cost(profiled_model(r.shape), r.batch_size, r.kv_cache_size)
                                for r in att_train], [r.attn_decode_median_ms * 1e-3 for r in att_train], 1,
                               [gemm.compute], FRACTIONS, FLOORS_S)
    return CalibratedEfficiency(gemm, attention, elementwise, A100_FIT.source)


def _elementwise_ms(r: data.LinearRow) -> float:
    return r.attn_rope_ms + r.mlp_act_ms + r.input_layernorm_ms + r.post_attention_layernorm_ms + r.add_ms


# Hopper: fitted on three layer shapes; Llama-2-70B (the layer shape of the kit's Llama 3.x 70B)
# and InternLM-20B are held out and tested in docs/fidelity.ipynb.
H100_HELD_OUT_MODELS = ("meta-llama/Llama-2-70b-hf", "internlm/internlm-20b")


def fit_h100() -> KernelFit:
    """Re-derive `HOPPER_FIT` from the training split of solutions/calibration/h100_profiles.py."""
    gemm, elementwise = fit_layer_kernels(
        [r for r in h100_data.LINEAR if r.model not in H100_HELD_OUT_MODELS], H100_SXM)
    return KernelFit(gemm, HOPPER_FIT.attention, elementwise, HOPPER_FIT.source)


# ---- held-out error per kernel class, and the shapes the fit and the test share --------------------
def held_out_by_kernel_class(fit: CalibratedEfficiency = A100_FIT, naive: bool = False) -> dict[str, ErrorSummary]:
    """Error on held-out A100 points per kernel class (a layer's four GEMMs, its five elementwise
    kernels, decode attention), not only on layer sums, where GEMM time hides elementwise error."""
    test = [p for p in points(fit) if p.held_out]
    return {kind: summarise([p for p in test if p.kind == kind], naive) for kind in KERNEL_KINDS}


def h100_kernel_points(fit: KernelFit = HOPPER_FIT, gpu: GPU = H100_SXM) -> list[Point]:
    """The H100 profiles per kernel class (GEMMs, elementwise) beside `fit`'s prediction; held out
    when the Hopper fit never saw the model."""
    out = []
    for r in h100_data.LINEAR:
        model, held_out = profiled_model(r.shape), r.model in H100_HELD_OUT_MODELS
        out.append(_measured("GEMMs", r.model, r.tp, r.num_tokens, 0, r.linear_total_ms * 1e-3,
                             gemm_layer_cost(model, r.num_tokens, r.tp), fit.gemm, GEMMS_PER_LAYER, held_out, r.source,
                             gpu))
        out.append(_elementwise_point(r, model, fit.elementwise, held_out, gpu))
    return out


@dataclass(frozen=True)
class SharedShape:
    """A weight GEMM of a held-out model with exactly the (in, out) shape of one in the fit."""

    test_model: str
    fit_model: str
    gemm: str
    in_features: int
    out_features: int
    share_of_layer_weights: float  # of the held-out model's linear weights per layer


def layer_gemm_shapes(shape) -> dict[str, tuple[int, int]]:
    """(in, out) of a profiled layer's four weight GEMMs at TP 1 (fused QKV, output, fused gate/up, down)."""
    h, q, kv, ff = shape.hidden, shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim, shape.intermediate
    return {"QKV": (h, q + 2 * kv), "output": (q, h), "gate/up": (h, 2 * ff), "down": (ff, h)}


def shape_overlap(shapes: dict, held_out: tuple) -> list[SharedShape]:
    """Every GEMM of a held-out model whose shape some fitted model also has: the split by model is
    not a split by shape, and a held-out error on such a GEMM is partly an in-sample error."""
    out = []
    for test in held_out:
        mine = layer_gemm_shapes(shapes[test])
        total = sum(i * o for i, o in mine.values())
        for fit_model, shape in shapes.items():
            if fit_model in held_out:
                continue
            theirs = layer_gemm_shapes(shape)
            for name, dims in mine.items():
                if theirs[name] == dims:
                    out.append(SharedShape(test, fit_model, name, *dims, dims[0] * dims[1] / total))
    return out
