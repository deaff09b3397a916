"""The kit's one step model: how long one forward step of a serving engine takes.

A step launches its kernels one after another, so their times ADD. Each kernel class sits at its
own bound (a roofline per kernel, never one roofline over the step's totals):

    t = sum over layers [ gemm(T) + attention(P, A) + elementwise(T) + allreduce(T) ]
        + lm_head(S) + overhead

  gemm        a layer's weight GEMMs on the step's T tokens: max(weights / BW, 2 N T / F) at the
              GEMM efficiency, plus a launch floor per GEMM. Weight-bound below the critical batch
              (about F / BW tokens), compute-bound above it, whatever the context.
  attention   over the KV cache: reads the P cached tokens (decode: bandwidth-bound) and does 4 H d
              FLOPs per causal (query, key) pair A (long prefill: compute-bound).
  elementwise norms, RoPE, SiLU-and-mul, residual add: a few passes per token, each bandwidth-bound
              or, at decode batches, bound by one token's row (a thread block per token).
  allreduce   tensor parallelism: two all-reduces of T x hidden activations per layer.
  lm_head     the vocabulary projection, only at the S positions that sample.
  overhead    per step, outside the kernels: scheduling, input preparation, sampling, launch gaps.

A step is described by four sums over its sequences (sequence i brings c_i new tokens on top of
p_i cached ones; a decode has c_i = 1): T = sum c_i, S = number of sequences, P = sum p_i and
A = sum c_i p_i + c_i (c_i + 1) / 2. Every cost below is linear in them, so the simulator prices a
step in O(1) whatever its batch.

Efficiencies come from measured kernels (`solutions.calibration.kernel_fits` fits them on Vidur's A100
profiles); on another GPU the same fractions of peak are an assumption, tested in
docs/fidelity.ipynb against measurements the fit never saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from solutions.hardware import DTYPE_BYTES, GPU
from solutions.models import Model
from solutions import step_defaults
from solutions.roofline import Efficiency, StepCost, expected_experts_touched, kernel_time
from solutions.step_defaults import Interconnect, KernelFit  # noqa: F401 (re-exported: the kit's names)

GEMMS_PER_LAYER = 4  # fused QKV, attention output, fused gate+up, down (the profiles' four linear ops)
ALLREDUCES_PER_LAYER = 2  # after the attention output projection and after the MLP down projection
ACTIVATION_DTYPE = "bf16"  # activations, attention math and the LM head stay 16-bit in every precision


@dataclass(frozen=True)
class Precision:
    """How a deployment stores and multiplies: `weight` sets the bytes a GEMM streams, `math` the
    tensor-core peak it runs at (W8A8 doubles both the peak and the weights per byte, so the
    critical batch stays put; weight-only quantisation shrinks bytes, not FLOPs, and moves it
    down), `kv` the bytes per cached token."""

    name: str
    weight: str
    math: str
    kv: str = "bf16"

    def __post_init__(self):
        for part in ("weight", "math", "kv"):
            if getattr(self, part) not in DTYPE_BYTES:
                raise ValueError(f"Precision {self.name!r}: {part} dtype {getattr(self, part)!r} is not one of "
                                 f"{sorted(DTYPE_BYTES)}")


BF16 = Precision("BF16", weight="bf16", math="bf16")
FP8 = Precision("FP8 W8A8", weight="fp8", math="fp8")  # Hopper and Blackwell FP8 tensor cores
INT8 = Precision("INT8 W8A8", weight="int8", math="int8")  # Ampere's INT8 tensor cores
W4A16 = Precision("W4A16", weight="int4", math="bf16")  # weight-only INT4 (AWQ/GPTQ-style): math in BF16
PRECISIONS = {p.name: p for p in (BF16, FP8, INT8, W4A16)}


@dataclass(frozen=True)
class StepTime:
    """Seconds of one step, by where they go. `seconds` is their sum: kernels run in sequence."""

    gemm_s: float = 0.0
    attention_s: float = 0.0
    elementwise_s: float = 0.0
    lm_head_s: float = 0.0
    allreduce_s: float = 0.0
    overhead_s: float = 0.0

    @property
    def seconds(self) -> float:
        return (self.gemm_s + self.attention_s + self.elementwise_s + self.lm_head_s + self.allreduce_s
                + self.overhead_s)

    @property
    def kernel_s(self) -> float:
        """GPU kernel time: what a profiler's kernel sums show (no all-reduce, no overhead)."""
        return self.gemm_s + self.attention_s + self.elementwise_s + self.lm_head_s

    def as_dict(self) -> dict[str, float]:
        return {"GEMMs": self.gemm_s, "attention": self.attention_s, "elementwise": self.elementwise_s,
                "LM head": self.lm_head_s, "all-reduce": self.allreduce_s, "overhead": self.overhead_s}

    def __float__(self) -> float:
        return self.seconds


@dataclass(frozen=True)
class StepShape:
    """The four sums a step's cost depends on (see the module docstring)."""

    tokens: float  # T: new tokens in the step (GEMM rows)
    seqs: float  # S: sequences, each sampling one position
    cached: float  # P: cached tokens read back as KV
    pairs: float  # A: causal (query, key) pairs

    @classmethod
    def decode(cls, batch: float, context_len: float) -> "StepShape":
        """`batch` sequences each emit one token after `context_len` cached tokens."""
        _check_positive(batch=batch)
        _check_non_negative(context_len=context_len)
        return cls(batch, batch, batch * context_len, batch * (context_len + 1))

    @classmethod
    def prefill(cls, tokens: float, sequences: int = 1, cached_tokens: float = 0) -> "StepShape":
        """`sequences` prompts of `tokens` new tokens each, on top of `cached_tokens` apiece."""
        _check_positive(tokens=tokens, sequences=sequences)
        _check_non_negative(cached_tokens=cached_tokens)
        pairs = tokens * cached_tokens + tokens * (tokens + 1) / 2
        return cls(tokens * sequences, sequences, cached_tokens * sequences, pairs * sequences)

    def __add__(self, other: "StepShape") -> "StepShape":
        """Two groups of sequences in one step: every sum adds."""
        return StepShape(self.tokens + other.tokens, self.seqs + other.seqs, self.cached + other.cached,
                         self.pairs + other.pairs)


# ---- what one layer must do, on one tensor-parallel shard ----------------------------------
def _widths(model: Model) -> tuple[int, int, int, int]:
    """Hidden size, query width, one of K/V's width, MLP width."""
    return (model.hidden_size, model.num_heads * model.head_dim,
            model.num_kv_heads * model.head_dim, model.intermediate_size)


def _kv_shard(model: Model, tp: int) -> float:
    """Fraction of a layer's KV heads one shard holds: 1/tp, but a head is never split (with more
    GPUs than KV heads each shard keeps a replica of one)."""
    return max(model.num_kv_heads / tp, 1) / model.num_kv_heads


def linear_params_per_layer(model: Model, experts: float | None = None) -> float:
    """Weight-GEMM parameters of one decoder layer (QKV, output, gate/up, down; `experts` of an
    MoE's experts), without the RMSNorm vectors."""
    attention = model.attention_params_per_layer - model.hidden_size
    mlp = model.mlp_params_per_layer(experts) - model.hidden_size
    return attention + mlp


def gemm_layer_cost(model: Model, tokens: float, tp: int = 1, weight_dtype: str = "bf16",
                    math_dtype: str = "bf16") -> StepCost:
    """One layer's weight GEMMs on one shard: 2 FLOP per active weight per token; bytes are the
    weights the tokens touch (an MoE reads only the experts its tokens are routed to) plus each
    GEMM's 16-bit input read and output written once. `math_dtype` is carried by the caller
    (it picks the peak), so FLOPs here are dtype-free."""
    _check_positive(tokens=tokens, tp=tp)
    _check_dtype(weight_dtype=weight_dtype, math_dtype=math_dtype)
    active = linear_params_per_layer(model, model.experts_per_token)
    touched = active if model.num_experts == 1 else linear_params_per_layer(
        model, expected_experts_touched(model, tokens))
    h, q, kv, ff = _widths(model)
    ff_active = ff * model.experts_per_token
    # inputs h (QKV), q/tp (out proj), h (gate/up), ff/tp (down); outputs (q+2kv)/tp, h, 2ff/tp, h
    activations = tokens * DTYPE_BYTES[ACTIVATION_DTYPE] * (4 * h + (2 * q + 2 * kv + 3 * ff_active) / tp)
    flops, weight_bytes = 2.0 * tokens * active / tp, touched * DTYPE_BYTES[weight_dtype] / tp
    if tp > model.num_kv_heads:
        # A rank holds K and V's projections for its KV heads, so past the KV-head count each is
        # replicated (`_kv_shard`; vLLM's QKVParallelLinear, see capacity._ShardWeights): a rank
        # reads and multiplies 1/num_kv_heads of them, not 1/tp, and writes that share of K and V.
        replicated = 2 * kv * (_kv_shard(model, tp) - 1 / tp)  # K and V widths a rank holds beyond 1/tp
        flops += 2.0 * tokens * h * replicated
        weight_bytes += h * replicated * DTYPE_BYTES[weight_dtype]
        activations += tokens * DTYPE_BYTES[ACTIVATION_DTYPE] * replicated
    return StepCost(flops=flops, weight_bytes=weight_bytes,
                    activation_bytes=activations, tokens=tokens)


def attention_layer_cost(model: Model, shape: StepShape, tp: int = 1, kv_dtype: str = "bf16") -> StepCost:
    """One layer's attention on one shard, decode and prefill alike (one varlen kernel): 4 H d FLOPs
    per causal pair; reads every cached K and V once, writes the new tokens' K and V, and moves
    Q, K, V in and the output out (FlashAttention never materialises the scores)."""
    _check_positive(tp=tp)
    _check_dtype(kv_dtype=kv_dtype)
    h, q, kv, ff = _widths(model)
    kv_layer = model.kv_bytes_per_token(kv_dtype) / model.n_attention * _kv_shard(model, tp)
    flops = 4.0 * model.num_heads * model.head_dim * shape.pairs / tp
    io = shape.tokens * DTYPE_BYTES[ACTIVATION_DTYPE] * (2 * q / tp + 2 * kv * _kv_shard(model, tp))
    return StepCost(flops=flops, kv_read_bytes=shape.cached * kv_layer, kv_write_bytes=shape.tokens * kv_layer,
                    activation_bytes=io, tokens=shape.tokens)


def elementwise_rows(model: Model, tp: int = 1) -> tuple[tuple[float, float], ...]:
    """A layer's five elementwise kernels as (rows per token, bytes per row, read and written):
    RoPE on a shard's queries and keys, SiLU-and-mul on a shard's MLP (a row per active expert),
    two RMSNorms and a residual add on the full hidden state, which every shard holds."""
    _check_positive(tp=tp)
    h, q, kv, ff = _widths(model)
    b = DTYPE_BYTES[ACTIVATION_DTYPE]
    return ((1, b * 2 * (q + kv) / tp), (model.experts_per_token, b * 3 * ff / tp),
            (1, b * 2 * h), (1, b * 2 * h), (1, b * 3 * h))


def elementwise_layer_cost(model: Model, tokens: float, tp: int = 1) -> StepCost:
    """RoPE, SiLU-and-mul, two RMSNorms and a residual add: no matmul, a few activation passes."""
    _check_positive(tokens=tokens, tp=tp)
    per_token = sum(rows * row_bytes for rows, row_bytes in elementwise_rows(model, tp))
    return StepCost(activation_bytes=tokens * per_token, tokens=tokens)


def elementwise_layer_s(model: Model, tokens, tp: int, eff: Efficiency, gpu: GPU):
    """Seconds for one layer's elementwise kernels on `tokens` tokens: each kernel takes the larger
    of its bytes at `eff.memory` of HBM and one row at `eff.row_bytes_per_s` (a block per token:
    few tokens leave most SMs idle), plus `eff.overhead_s`. Works on numpy arrays of tokens."""
    return _RowKernels.of(model, tp, eff, gpu, 1).seconds(tokens)


def lm_head_cost(model: Model, positions: float, tp: int = 1) -> StepCost:
    """The vocabulary projection at the positions that sample (vocab split across shards). Kept
    in 16 bits in every precision, as quantised checkpoints leave it."""
    _check_positive(positions=positions, tp=tp)
    params = model.embedding_params / tp
    b = DTYPE_BYTES[ACTIVATION_DTYPE]
    return StepCost(flops=2.0 * positions * params, weight_bytes=params * b,
                    activation_bytes=positions * b * (model.hidden_size + model.vocab_size / tp), tokens=positions)


# ---- the model --------------------------------------------------------------------------------
@dataclass(frozen=True)
class _LinearKernel:
    """A kernel class whose FLOPs and bytes are linear in (1, T, S, P, A): its time is then
    `count` x (max(flops / F, bytes / BW) + `kernels` floors), priced in O(1) floats."""

    flops: tuple  # coefficients over (1, T, S, P, A)
    bytes: tuple
    flops_per_s: float
    bytes_per_s: float
    floor_s: float  # kernels x the fit's per-launch floor
    count: int  # layers that run it

    @classmethod
    def of(cls, cost_at, eff: Efficiency, kernels: int, count: int, gpu: GPU, math: str) -> "_LinearKernel":
        """`cost_at(shape)` must be linear in the shape; coefficients come from unit shapes."""
        zero = cost_at(StepShape(0.0, 0.0, 0.0, 0.0))
        units = [cost_at(StepShape(*row)) for row in np.eye(4)]
        flops = (zero.flops, *(u.flops - zero.flops for u in units))
        moved = (zero.bytes, *(u.bytes - zero.bytes for u in units))
        return cls(flops, moved, gpu.peak_flops(math) * eff.compute, gpu.hbm_bytes_per_s * eff.memory,
                   kernels * eff.overhead_s, count)

    def seconds(self, t, s, p, a):
        """Works on floats and, elementwise, on numpy arrays."""
        f0, ft, fs, fp, fa = self.flops
        b0, bt, bs, bp, ba = self.bytes
        compute = (f0 + ft * t + fs * s + fp * p + fa * a) / self.flops_per_s
        memory = (b0 + bt * t + bs * s + bp * p + ba * a) / self.bytes_per_s
        if isinstance(compute, np.ndarray) or isinstance(memory, np.ndarray):
            return self.count * (np.maximum(compute, memory) + self.floor_s)
        return self.count * ((compute if compute > memory else memory) + self.floor_s)


@dataclass(frozen=True)
class _RowKernels:
    """The elementwise kernels: sum over kernels of max(slope_i x T, row_i) + floors, `count` times."""

    slopes: tuple  # seconds per token at the fitted HBM fraction
    rows: tuple  # seconds for one row at the fitted per-block bandwidth
    floor_s: float
    count: int

    @classmethod
    def of(cls, model: Model, tp: int, eff: Efficiency, gpu: GPU, count: int) -> "_RowKernels":
        kernels = elementwise_rows(model, tp)
        bw = gpu.hbm_bytes_per_s * eff.memory
        return cls(tuple(n * b / bw for n, b in kernels), tuple(b / eff.row_bytes_per_s for _, b in kernels),
                   len(kernels) * eff.overhead_s, count)

    def seconds(self, t):
        if isinstance(t, np.ndarray):
            return self.count * (sum(np.maximum(a * t, c) for a, c in zip(self.slopes, self.rows)) + self.floor_s)
        return self.count * (sum(a * t if a * t > c else c for a, c in zip(self.slopes, self.rows)) + self.floor_s)


@dataclass(frozen=True)
class StepModel:
    """Seconds per forward step for `model` on `tp` x `gpu` at `precision`, from per-kernel-class
    rooflines (`fit`), the tensor-parallel link and a per-step overhead."""

    model: Model
    gpu: GPU
    fit: KernelFit
    interconnect: Interconnect | None
    overhead_s: float
    tp: int = 1
    precision: Precision = BF16
    # Per-step time outside kernels that grows with the step (vLLM's scheduling and input
    # preparation per running request, per scheduled token): 0 in the kernel ceiling, fitted on
    # published vLLM runs in the "vllm-defaults" regime (solutions.step_defaults).
    overhead_per_seq_s: float = 0.0
    overhead_per_token_s: float = 0.0
    regime: str = "kernel-ceiling"
    _kernels: dict = field(init=False, repr=False, compare=False)
    _scalar: object = field(init=False, repr=False, compare=False)  # `seconds` on floats, see _scalar_seconds
    _decode_rest: dict = field(init=False, repr=False, compare=False)  # batch -> a decode step less attention

    def __post_init__(self):
        if not isinstance(self.tp, int) or self.tp < 1:
            raise ValueError(f"tp must be a positive integer, got {self.tp!r}")
        for name in ("overhead_s", "overhead_per_seq_s", "overhead_per_token_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.tp > 1 and self.interconnect is None:
            raise ValueError(f"tp={self.tp} needs an interconnect; none is known for {self.gpu.name}")
        if self.model.mamba_layers:
            raise ValueError(f"model {self.model.name!r}: the step model covers attention transformers "
                             "(dense and MoE), not Mamba hybrids")
        self.gpu.peak_flops(self.precision.math)  # fails early, naming the GPU, if it lacks the peak
        m, tp, p, fit, gpu = self.model, self.tp, self.precision, self.fit, self.gpu
        kernels = dict(
            attention=_LinearKernel.of(lambda x: attention_layer_cost(m, x, tp, p.kv), fit.attention, 1,
                                       m.n_attention, gpu, ACTIVATION_DTYPE),
            elementwise=_RowKernels.of(m, tp, fit.elementwise, gpu, m.num_layers),
            lm_head=_LinearKernel.of(lambda x: _lm_head_linear(m, x.seqs, tp), fit.gemm, 1, 1, gpu,
                                     ACTIVATION_DTYPE),
        )
        if m.num_experts == 1:  # a dense layer's GEMM bytes are weights + activations: linear
            kernels["gemm"] = _LinearKernel.of(lambda x: _gemm_linear(m, x.tokens, tp, p), fit.gemm,
                                               GEMMS_PER_LAYER, m.num_layers, gpu, p.math)
        object.__setattr__(self, "_kernels", kernels)
        object.__setattr__(self, "_scalar", self._scalar_seconds())
        object.__setattr__(self, "_decode_rest", {})

    @classmethod
    def of(cls, model: Model, gpu: GPU, tp: int = 1, precision: Precision = BF16, regime: str = "kernel-ceiling",
           **overrides) -> "StepModel":
        """The realistic default: the calibrated kernel fit, the GPU's NVLink as vLLM's all-reduce
        sees it and the per-step overhead of a CUDA-graph engine (`solutions.step_defaults`).

        `regime` names what is priced: "kernel-ceiling" (the default: a well-tuned engine, the
        kernels plus one small constant per step) or "vllm-defaults" (vLLM as it runs with every
        setting at its default: Hopper attention from published H100 kernel measurements and a
        per-step time outside kernels that grows with the step's requests and tokens, fitted on
        published vLLM runs; `step_defaults.VLLM_DEFAULTS`, fitted by `calibration.vllm_regime`). Keyword `overrides` replace any of
        fit / interconnect / overhead_s / overhead_per_seq_s / overhead_per_token_s."""
        if regime not in step_defaults.REGIMES:
            raise ValueError(f"regime must be one of {step_defaults.REGIMES}, got {regime!r}")
        args = dict(fit=step_defaults.kernel_fit(gpu), interconnect=step_defaults.interconnect(gpu),
                    overhead_s=step_defaults.STEP_OVERHEAD_S, overhead_per_seq_s=0.0, overhead_per_token_s=0.0)
        args.update(step_defaults.regime_args(gpu, regime))
        unknown = set(overrides) - set(args)
        if unknown:
            raise TypeError(f"StepModel.of got unexpected overrides {sorted(unknown)}; allowed: {sorted(args)}")
        args.update(overrides)
        return cls(model=model, gpu=gpu, tp=tp, precision=precision, regime=regime, **args)

    # ---- the kernel classes, each summed over the layers that run it -----------------------
    def gemm_s(self, tokens):
        """All layers' weight GEMMs on `tokens` rows."""
        if not isinstance(tokens, np.ndarray) and tokens <= 0:
            return 0.0
        if "gemm" in self._kernels:
            return self._kernels["gemm"].seconds(tokens, 0, 0, 0)
        cost = gemm_layer_cost(self.model, tokens, self.tp, self.precision.weight, self.precision.math)
        eff = self.fit.gemm
        return self.model.num_layers * kernel_time(
            cost, self.gpu, replace(eff, overhead_s=GEMMS_PER_LAYER * eff.overhead_s), self.precision.math)

    def attention_s(self, shape: StepShape):
        return self._kernels["attention"].seconds(shape.tokens, shape.seqs, shape.cached, shape.pairs)

    def elementwise_s(self, tokens):
        return self._kernels["elementwise"].seconds(tokens)

    def lm_head_s(self, positions):
        return self._kernels["lm_head"].seconds(0, positions, 0, 0)

    def allreduce_s(self, tokens):
        if self.tp == 1 or (not isinstance(tokens, np.ndarray) and tokens <= 0):
            return 0.0
        message = tokens * self.model.hidden_size * DTYPE_BYTES[ACTIVATION_DTYPE]
        return self.model.num_layers * ALLREDUCES_PER_LAYER * self.interconnect.allreduce_s(message, self.tp)

    # ---- steps ------------------------------------------------------------------------------
    def time(self, shape: StepShape) -> StepTime:
        """One step of the given shape, with its breakdown."""
        if not (shape.tokens > 0 and shape.seqs > 0 and shape.cached >= 0 and shape.pairs >= 0):
            raise ValueError(f"a step needs at least one token and one sequence, got {shape}")
        t = shape.tokens
        return StepTime(gemm_s=float(self.gemm_s(t)), attention_s=float(self.attention_s(shape)),
                        elementwise_s=float(self.elementwise_s(t)), lm_head_s=float(self.lm_head_s(shape.seqs)),
                        allreduce_s=float(self.allreduce_s(t)), overhead_s=self.step_overhead_s(t, shape.seqs))

    def step_overhead_s(self, tokens, seqs):
        """Time outside kernels for a step of `tokens` new tokens over `seqs` sequences: the
        constant, plus the per-request and per-token terms of the "vllm-defaults" regime."""
        if not (self.overhead_per_seq_s or self.overhead_per_token_s):
            return self.overhead_s
        return self.overhead_s + self.overhead_per_seq_s * seqs + self.overhead_per_token_s * tokens

    def seconds(self, tokens: float, seqs: float, cached: float, pairs: float) -> float:
        """`time(...).seconds` from the four sums, without the breakdown (the simulator's hot path)."""
        return self._scalar(tokens, seqs, cached, pairs)

    def _scalar_seconds(self):
        """`seconds` as one closure over the kernel classes' coefficients: the same arithmetic in
        the same order as the kernel classes' own `seconds` (terms multiplied by a zero argument
        dropped, which leaves every float unchanged), without their per-call dispatch. The
        simulator calls it once per step; `tests/test_step_model.py` checks it against `time`."""
        k = self._kernels
        gemm, att, lm, rows = k.get("gemm"), k["attention"], k["lm_head"], k["elementwise"]
        af0, aft, afs, afp, afa = att.flops
        ab0, abt, abs_, abp, aba = att.bytes
        aF, aB, afl, an = att.flops_per_s, att.bytes_per_s, att.floor_s, att.count
        lf0, _, lfs, _, _ = lm.flops
        lb0, _, lbs, _, _ = lm.bytes
        lF, lB, lfl, ln = lm.flops_per_s, lm.bytes_per_s, lm.floor_s, lm.count
        pairs_ = tuple(zip(rows.slopes, rows.rows))
        efl, en = rows.floor_s, rows.count
        o0, oseq, otok = self.overhead_s, self.overhead_per_seq_s, self.overhead_per_token_s
        grows = bool(oseq or otok)
        allreduce, gemm_s = self.allreduce_s, self.gemm_s
        if gemm is not None:
            gf0, gft = gemm.flops[:2]
            gb0, gbt = gemm.bytes[:2]
            gF, gB, gfl, gn = gemm.flops_per_s, gemm.bytes_per_s, gemm.floor_s, gemm.count

        def seconds(t, s, p, a):
            if gemm is None:
                g = gemm_s(t)
            elif t <= 0:
                g = 0.0
            else:
                c, m = (gf0 + gft * t) / gF, (gb0 + gbt * t) / gB
                g = gn * ((c if c > m else m) + gfl)
            c = (af0 + aft * t + afs * s + afp * p + afa * a) / aF
            m = (ab0 + abt * t + abs_ * s + abp * p + aba * a) / aB
            attention = an * ((c if c > m else m) + afl)
            elementwise = en * (sum(x * t if x * t > r else r for x, r in pairs_) + efl)
            c, m = (lf0 + lfs * s) / lF, (lb0 + lbs * s) / lB
            head = ln * ((c if c > m else m) + lfl)
            overhead = o0 + oseq * s + otok * t if grows else o0
            return float(g + attention + elementwise + head + allreduce(t) + overhead)

        return seconds

    def decode(self, batch: float, context_len: float) -> StepTime:
        """A decode-only step: `batch` sequences each holding `context_len` cached tokens."""
        return self.time(StepShape.decode(batch, context_len))

    def prefill(self, tokens: float, sequences: int = 1, cached_tokens: float = 0) -> StepTime:
        """A prefill-only step: `sequences` prompts of `tokens` new tokens each."""
        return self.time(StepShape.prefill(tokens, sequences, cached_tokens))

    def mixed(self, decodes: int, decode_context: float, prefill_tokens: float,
              prefill_cached: float = 0) -> StepTime:
        """One chunked-prefill step: `decodes` running sequences at `decode_context` plus one chunk
        of `prefill_tokens` on top of `prefill_cached` tokens of the same prompt."""
        parts = []
        if decodes:
            parts.append(StepShape.decode(decodes, decode_context))
        if prefill_tokens:
            parts.append(StepShape.prefill(prefill_tokens, 1, prefill_cached))
        if not parts:
            raise ValueError("a mixed step needs decodes or prefill tokens")
        shape = parts[0] if len(parts) == 1 else parts[0] + parts[1]
        return self.time(shape)

    def decode_run_seconds(self, batch: int, cached: np.ndarray) -> np.ndarray:
        """Seconds of consecutive decode-only steps of `batch` sequences holding `cached` tokens
        in total at each step: `seconds` over an array (only attention changes within a run)."""
        cached = np.asarray(cached, dtype=float)
        rest = self._decode_rest.get(batch)
        if rest is None:  # a run's steps differ only in attention: the rest, once per batch size
            rest = self._decode_rest[batch] = (self.seconds(batch, batch, 0.0, 0.0)
                                               - self.attention_s(StepShape(batch, batch, 0.0, 0.0)))
        return rest + self._kernels["attention"].seconds(batch, batch, cached, cached + batch)

    # ---- what the model says about batches --------------------------------------------------
    @property
    def critical_batch(self) -> float:
        """Tokens per step at which the weight GEMMs turn compute-bound at the fitted
        efficiencies: 2 T / (F c) = bytes_per_weight / (BW m), i.e. T = F c b / (2 BW m)."""
        return self._critical(self.fit.gemm.compute, self.fit.gemm.memory)

    @property
    def critical_batch_at_peak(self) -> float:
        """The same at datasheet peaks: peak FLOP/s x bytes per weight / (2 x peak bandwidth)."""
        return self._critical(1.0, 1.0)

    def _critical(self, compute: float, memory: float) -> float:
        flops = self.gpu.peak_flops(self.precision.math) * compute
        return flops * DTYPE_BYTES[self.precision.weight] / (2 * self.gpu.hbm_bytes_per_s * memory)

    def __call__(self, plan) -> float:
        """Seconds for a simulator `StepPlan` (anything with tokens, seqs, cached, pairs)."""
        return self.seconds(plan.tokens, plan.seqs, plan.cached, plan.pairs)


def _gemm_linear(model: Model, tokens: float, tp: int, precision: Precision) -> StepCost:
    """A dense layer's GEMMs as a linear function of tokens: the weights are read once per step
    (the constant term), FLOPs and activations grow with tokens."""
    one = gemm_layer_cost(model, 1, tp, precision.weight, precision.math)
    return StepCost(flops=one.flops * tokens, weight_bytes=one.weight_bytes,
                    activation_bytes=one.activation_bytes * tokens, tokens=tokens)


def _lm_head_linear(model: Model, positions: float, tp: int) -> StepCost:
    one = lm_head_cost(model, 1, tp)
    return StepCost(flops=one.flops * positions, weight_bytes=one.weight_bytes,
                    activation_bytes=one.activation_bytes * positions, tokens=positions)


def _check_dtype(**values):
    for name, value in values.items():
        if value not in DTYPE_BYTES:
            raise ValueError(f"{name} must be one of {sorted(DTYPE_BYTES)}, got {value!r}")


def _check_positive(**values):
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value}")


def _check_non_negative(**values):
    for name, value in values.items():
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
