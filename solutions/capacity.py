"""How many sequences one GPU can run at once, and why: the KV pool, the two batch ceilings
(KV memory, latency target), the GEMMs' critical batch (a knee) and the Little's-law batch.

Memory sizes here are bytes; pools are usually *printed* in GiB because vLLM logs them that
way (its total comes from torch in bytes). Rates and datasheet capacities stay decimal.

Step times come from the kit's one step model (`solutions.step_model.StepModel`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from solutions.hardware import DTYPE_BYTES, GPU
from solutions.models import Model, vocab_bytes_per_param
from solutions.step_model import StepModel, StepShape
from solutions.units import GiB

# What torch (and so vLLM's MemorySnapshot) sees as a GPU's total memory, where we know it.
# A card sold as "80GB" reports more than 80e9 bytes: about 79 GiB (85 GB).
TORCH_TOTAL_MEMORY_BYTES = {
    "A100 80GB SXM": 79.15 * GiB,
    "H100 SXM": 79.18 * GiB,
    "H200 SXM": 139.80 * GiB,
}
TORCH_TOTAL_MEMORY_SOURCE = (
    "The total torch reports in its CUDA out-of-memory message. "
    "A100 80GB: 'GPU 3 has a total capacity of 79.15 GiB' (vllm-project/vllm issue 8903, 4x A100 80GB); "
    "H100 80GB HBM3: 'GPU 0 has a total capacity of 79.18 GiB' on 1x H100 HBM3 (79.21 on its 8x nodes; "
    "PrimeIntellect-ai/prime-rl:benchmarks/results/BENCHMARKS.md, 'Failed Benchmarks', version of 2026-01-13); "
    "H200: 'GPU 0 has a total capacity of 139.80 GiB' (ZhengHongming888/dynamo@"
    "206b708986af1a7816f0eebd504e88d7fb0f66d8:01_cuda_sh/disagg_h200_32b/8img_4k_blocked.md, and the same "
    "prime-rl page). The figure moves by ~0.1 GiB with the driver. NVML (nvidia-smi) "
    "lists more, 81,920 / 81,559 / 143,771 MiB (thundergolfer.com/blog/nvidia-gpu-memory-capacity): the driver "
    "keeps a few hundred MiB that torch never sees"
)

# vLLM's default share of GPU memory at the pinned release:
# `vllm==0.33.0:vllm/config/cache.py` `gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)`.
# From that budget the worker takes the profiled non-KV memory and, by default, a profiled CUDA-graph
# estimate (`vllm==0.33.0:vllm/envs.py` `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS: bool = True`;
# `vllm==0.33.0:vllm/v1/worker/gpu_worker.py` `- cudagraph_memory_estimate_applied`): the kit's
# `non_kv_bytes` below stands for both.
VLLM_GPU_MEMORY_UTILIZATION = 0.92

def total_memory_bytes(gpu: GPU) -> float:
    """The total an engine sizes its pool from: torch's figure where known, else the datasheet
    capacity (decimal GB), which understates a real card by a few percent."""
    return TORCH_TOTAL_MEMORY_BYTES.get(gpu.name, gpu.hbm_capacity_bytes)


def kv_pool_bytes(
    model: Model,
    total_bytes: float,
    gpu_memory_utilization: float = VLLM_GPU_MEMORY_UTILIZATION,
    non_kv_bytes: float = 2 * GiB,
    weight_dtype: str = "bf16",
) -> float:
    """KV pool the way vLLM's worker sizes it: total x utilization, minus the weights, minus
    everything else the profile run measures (activation peak, memory outside torch such as NCCL
    buffers) and the CUDA-graph estimate it subtracts by default. `non_kv_bytes` is that
    "everything else": an assumption here, a measurement in vLLM, which logs the result as
    "Available KV cache memory". The default 2 GiB is of the size published start-up logs show for
    models of 10-15 GiB of weights: activation peak 1.0-1.8 GiB and 0.33 GiB outside torch for 10.8 GiB
    of weights (vllm-project/vllm#14452,
    a V0 log), a CUDA-graph estimate of 0.36 GiB for 16 capture sizes (gpustack/runner#251,
    "Estimated CUDA graph memory: 0.36 GiB total"); more capture sizes take more."""
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}")
    if non_kv_bytes < 0:
        raise ValueError(f"non_kv_bytes must be >= 0, got {non_kv_bytes}")
    pool = total_bytes * gpu_memory_utilization - model.weight_bytes(weight_dtype) - non_kv_bytes
    if pool <= 0:
        raise ValueError(
            f"no room for KV: {total_bytes / GiB:.1f} GiB x {gpu_memory_utilization} does not cover "
            f"{model.name}'s weights ({model.weight_bytes(weight_dtype) / GiB:.1f} GiB) plus "
            f"{non_kv_bytes / GiB:.1f} GiB of non-KV memory")
    return pool


# ---- feasibility: the one place the kit asks "does this batch fit in the KV pool?" -------------
# vLLM gives each tensor-parallel rank max(1, KV heads // TP) KV heads: with more ranks than KV
# heads each rank keeps a replica of one, so its KV per token stops shrinking with TP
# (`vllm==0.33.0:vllm/config/model.py` `return max(1, total_num_kv_heads // parallel_config.tensor_parallel_size)`).
def kv_heads_per_gpu(model: Model, tp: int = 1) -> int:
    """KV heads one tensor-parallel rank holds (replicated when `tp` exceeds the KV-head count)."""
    if not isinstance(tp, int) or tp < 1:
        raise ValueError(f"tp must be a positive integer, got {tp!r}")
    return max(1, model.num_kv_heads // tp)


def kv_bytes_per_token_per_gpu(model: Model, tp: int = 1, kv_dtype: str = "bf16", pp: int = 1) -> float:
    """KV bytes one cached token costs on each rank: 2 x the rank's attention layers (all of them,
    or the largest pipeline stage's with `pp` stages) x the rank's KV heads x head_dim."""
    return _kv_bytes_per_token(model, tp, max(_stage_attention_layers(model, pp)), kv_dtype)


def _kv_bytes_per_token(model: Model, tp: int, attention_layers: int, kv_dtype: str) -> float:
    """KV bytes per cached token on a rank holding `attention_layers` attention layers."""
    return 2 * attention_layers * kv_heads_per_gpu(model, tp) * model.head_dim * DTYPE_BYTES[kv_dtype]


# vLLM splits the layers over pipeline stages with `get_pp_indices`: `num_layers // pp` each, and the
# remainder goes one layer apiece to the stages before the last, counting back from the second-to-last
# (`vllm==0.33.0:vllm/distributed/utils.py` `for i in range(2, remaining_layers + 2):`), so the
# first stage (which holds the embedding) and the last (the LM head) keep the short share unless the
# remainder is pp - 1. Every stage then sizes its own pool and the engine gives every rank the
# smallest block count (`vllm==0.33.0:vllm/v1/core/kv_cache_planning.py`
# `# Change the num_blocks of each rank to the smallest among all ranks.`).
def stage_layers(num_layers: int, pp: int) -> list[int]:
    """Layers of each of `pp` pipeline stages, split the way vLLM 0.33.0 splits them by default
    (`VLLM_PP_LAYER_PARTITION` unset): 126 layers over 8 stages are 15/16/16/16/16/16/16/15."""
    if type(pp) is not int or pp < 1 or pp > num_layers:
        raise ValueError(f"pp must be an integer in [1, {num_layers}], got {pp!r}")
    split = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        split[-i] += 1
    return split


def _stage_attention_layers(model: Model, pp: int) -> list[int]:
    """Attention layers on each stage: the stage's layers for a plain transformer; for a hybrid the
    attention layers split the same way (an approximation: where they sit is not modelled)."""
    layers = stage_layers(model.num_layers, pp)
    return layers if model.n_attention == model.num_layers else stage_layers(model.n_attention, pp)


class InfeasibleBatch(ValueError):
    """A batch whose KV does not fit in the pool it is priced on."""


@dataclass(frozen=True)
class KVCapacity:
    """The KV pool of `model` on `tp` x `gpu`, per rank, sized the way vLLM's worker sizes it
    (`kv_pool_bytes` on one rank's total, with the rank's shard of the weights), and what fits in
    it. Every kit helper that prices a batch or a capacity asks this object; `check` raises
    `InfeasibleBatch` naming the pool and the batch, `clamp` returns "at most what fits"."""

    model: Model
    gpu: GPU
    tp: int
    weight_dtype: str
    kv_dtype: str
    gpu_memory_utilization: float
    non_kv_bytes: float  # per rank
    pool_bytes: float  # per rank
    pp: int = 1  # pipeline stages: a rank holds its stage's layers
    stage: int = 0  # the stage whose pool holds the fewest tokens (it binds; `pool_bytes` is its)
    stage_tokens: tuple[int, ...] = ()  # tokens each stage's pool would hold on its own

    @property
    def kv_bytes_per_token(self) -> float:
        """Per rank of the binding stage (KV-head replication included)."""
        layers = _stage_attention_layers(self.model, self.pp)[self.stage]
        return _kv_bytes_per_token(self.model, self.tp, layers, self.kv_dtype)

    @property
    def tokens(self) -> int:
        """Cached tokens the pool holds (the same on every rank)."""
        return math.floor(self.pool_bytes / self.kv_bytes_per_token)

    @property
    def replicated(self) -> bool:
        return self.tp > self.model.num_kv_heads

    def sequences(self, context_len: float) -> int:
        """Whole sequences of `context_len` cached tokens that fit (block rounding ignored)."""
        _check_positive(context_len=context_len)
        return math.floor(self.tokens / context_len)

    def holds(self, batch: float, context_len: float) -> bool:
        return batch * context_len <= self.tokens

    def describe(self) -> str:
        rep = (f", KV heads replicated: {kv_heads_per_gpu(self.model, self.tp)} of {self.model.num_kv_heads} per rank"
               if self.replicated else "")
        layout = f"TP {self.tp} x PP {self.pp} = {self.tp * self.pp}" if self.pp > 1 else f"{self.tp}"
        stage = f" (stage {self.stage + 1} of {self.pp} binds)" if self.pp > 1 else ""
        return (f"{self.model.name} on {layout} x {self.gpu.name} ({self.weight_dtype} weights, {self.kv_dtype} KV, "
                f"gpu_memory_utilization {self.gpu_memory_utilization}): KV pool {self.pool_bytes / GiB:.1f} GiB per rank"
                f"{stage} = {self.tokens:,} tokens{rep}")

    def check_tokens(self, tokens: float, what: str = "batch") -> None:
        """Raise `InfeasibleBatch` unless `tokens` cached tokens (a whole batch's) fit."""
        if tokens > self.tokens:
            raise InfeasibleBatch(f"{what}: {tokens:,.0f} KV tokens do not fit: {self.describe()} "
                                  f"({tokens / self.tokens:.1f}x the pool)")

    def check(self, batch: float, context_len: float, what: str = "batch") -> None:
        """Raise `InfeasibleBatch` unless `batch` sequences of `context_len` cached tokens fit."""
        _check_positive(batch=batch)
        if not self.holds(batch, context_len):
            raise InfeasibleBatch(
                f"{what}: {batch:,.0f} sequences x {context_len:,.0f} tokens = {batch * context_len:,.0f} KV tokens "
                f"do not fit: {self.describe()}, at most {self.sequences(context_len):,} such sequences "
                f"({batch * context_len / self.tokens:.1f}x the pool)")

    def clamp(self, batch: int, context_len: float) -> int:
        """min(batch, what fits): for answers that want "at most what fits" (say so where used)."""
        return min(int(batch), self.sequences(context_len))


def kv_capacity(model: Model, gpu: GPU, tp: int = 1, *, weight_dtype: str = "bf16", kv_dtype: str = "bf16",
                gpu_memory_utilization: float = VLLM_GPU_MEMORY_UTILIZATION,
                non_kv_bytes: float = 2 * GiB, precision=None, pp: int = 1) -> KVCapacity:
    """The KV pool and what fits in it for `model` on `tp` x `gpu` (per rank: the rank's total
    x utilization - its shard of the weights - `non_kv_bytes`). `precision` (a step-model
    `Precision`) sets both dtypes at once. A rank's shard is 1/tp of the weights except K/V's
    projections, which it holds for its KV heads: replicated past the KV-head count (`_ShardWeights`).
    With `pp` pipeline stages (`stage_layers`, vLLM's split) each rank holds its stage's layers,
    the first stage the embedding and the last the LM head; the stage whose pool holds the fewest
    tokens binds every stage, as in vLLM."""
    if precision is not None:
        weight_dtype, kv_dtype = precision.weight, precision.kv
    kv_heads_per_gpu(model, tp)  # validates tp
    for name, dtype in (("weight_dtype", weight_dtype), ("kv_dtype", kv_dtype)):
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"{name} must be one of {sorted(DTYPE_BYTES)}, got {dtype!r}")
    layers, attention = stage_layers(model.num_layers, pp), _stage_attention_layers(model, pp)
    total = total_memory_bytes(gpu)
    pools, tokens = [], []
    for s in range(pp):
        shard = _ShardWeights(model, tp, layers[s], attention[s], first=s == 0, last=s == pp - 1)
        pools.append(kv_pool_bytes(shard, total, gpu_memory_utilization, non_kv_bytes, weight_dtype))
        per_token = _kv_bytes_per_token(model, tp, attention[s], kv_dtype)
        tokens.append(math.floor(pools[s] / per_token) if per_token else math.inf)
    stage = min(range(pp), key=lambda s: (tokens[s], s))
    return KVCapacity(model, gpu, tp, weight_dtype, kv_dtype, gpu_memory_utilization, non_kv_bytes, pools[stage], pp,
                      stage, tuple(tokens))


def step_model_capacity(step_model: StepModel, **kw) -> KVCapacity:
    """`kv_capacity` for a step model's model, GPU, TP and precision (keywords go to it)."""
    return kv_capacity(step_model.model, step_model.gpu, step_model.tp, precision=step_model.precision, **kw)


def feasible_decode(step_model: StepModel, batch: float, context_len: float, what: str = "decode batch",
                    capacity: KVCapacity | None = None):
    """`step_model.decode(batch, context_len)` after checking that the batch's KV fits the pool
    (`capacity`, default the step model's own at vLLM's defaults): raises `InfeasibleBatch`
    naming the pool and the batch when it does not."""
    (capacity or step_model_capacity(step_model)).check(batch, context_len, what)
    return step_model.decode(batch, context_len)


@dataclass(frozen=True)
class _ShardWeights:
    """One rank's view of a model for `kv_pool_bytes`: its share of `layers` decoder layers
    (`attention_layers` of them with attention), the embedding on the first stage, the LM head on
    the last (with more than one stage a tied LM head is a second copy: vLLM's last rank builds its
    own embedding to tie it to), the model's name. Tensor parallelism splits everything 1/tp
    except K and V's projections: a rank holds those of its KV heads, so past the KV-head count
    each is replicated (`vllm==0.33.0:vllm/model_executor/layers/linear.py`
    `self.num_kv_head_replicas = divide(tp_size, self.total_num_kv_heads)`): 405B on TP16 holds
    1/8 of k_proj and v_proj per rank, not 1/16."""

    model: Model
    tp: int
    layers: int
    attention_layers: int
    first: bool = True
    last: bool = True

    @property
    def name(self) -> str:
        m = self.model
        if self.tp == 1 and self.first and self.last:
            return m.name
        where = "" if self.first and self.last else f", {self.layers} of {m.num_layers} layers"
        return f"{m.name} (one rank's shard: TP {self.tp}{where})"

    def weight_bytes(self, dtype: str = "bf16") -> float:
        m, tp = self.model, self.tp
        if tp == 1 and self.first and self.last:
            return m.weight_bytes(dtype)
        vocab = m.embedding_params * vocab_bytes_per_param(dtype)
        vocab_copies = 2 if not m.tie_word_embeddings else 1
        body = m.weight_bytes(dtype) - vocab_copies * vocab - m.hidden_size * DTYPE_BYTES[dtype]  # layers only
        kv_proj = 2 * m.num_kv_heads * m.head_dim * (m.hidden_size + (1 if m.qkv_bias else 0)) * DTYPE_BYTES[dtype]
        kv_share = kv_heads_per_gpu(m, tp) / m.num_kv_heads  # 1/tp up to the KV-head count, then a whole head
        rest_per_layer = (body - m.n_attention * kv_proj) / m.num_layers
        held = self.layers * rest_per_layer / tp + self.attention_layers * kv_proj * kv_share
        if self.first:
            held += vocab / tp  # VocabParallelEmbedding
        if self.last:
            held += (vocab / tp if (not m.tie_word_embeddings or not self.first) else 0)  # ParallelLMHead
            held += m.hidden_size * DTYPE_BYTES[dtype] / tp  # final norm (whole on every rank, 32 kB: split, as the kit always has)
        return held


def sequences_that_fit(pool_bytes: float, model: Model, context_len: float, kv_dtype: str = "bf16") -> int:
    """Whole sequences of `context_len` cached tokens the pool holds (block rounding ignored:
    it wastes less than one block per sequence)."""
    _check_positive(pool_bytes=pool_bytes, context_len=context_len)
    return math.floor(pool_bytes / (context_len * model.kv_bytes_per_token(kv_dtype)))


def steady_step_shape(batch: float, context_len: float, output_tokens: float | None = None) -> StepShape:
    """One steady-state step of `batch` running sequences at a mean cached context of `context_len`.
    Without `output_tokens`, a decode-only step. With it, also the prompts that start in the step, as
    chunked prefill mixes them in (q08): a request stays `output_tokens` steps, so batch / output_tokens
    prompts start per step, each of context_len - output_tokens / 2 tokens (a running sequence is on
    average half-way through its answer). Each decode then carries prompt / output prompt tokens."""
    decode = StepShape.decode(batch, context_len)
    if output_tokens is None:
        return decode
    return decode + StepShape.prefill(_mean_prompt(context_len, output_tokens), sequences=batch / output_tokens)


def _mean_prompt(context_len: float, output_tokens: float) -> float:
    """The prompt of a request whose running sequences sit at `context_len` on average (half-way through its answer)."""
    prompt = context_len - output_tokens / 2
    if not (output_tokens > 0 and prompt > 0):
        raise ValueError(f"need 0 < output_tokens < 2 x context_len, got {output_tokens!r} at {context_len!r}")
    return prompt


def batch_within(step_model: StepModel, context_len: float, tpot_s: float, max_batch: int = 1 << 16,
                 output_tokens: float | None = None) -> int:
    """Largest running batch whose step (at `context_len` cached tokens per sequence) fits in
    `tpot_s`; 0 if not even one sequence does. The step is `steady_step_shape`: decode-only, or with
    `output_tokens` given, the decodes plus their share of prompts. Step time grows with the batch, so
    bisect."""
    _check_positive(tpot_s=tpot_s)

    def step_s(b: int) -> float:
        return step_model.time(steady_step_shape(b, context_len, output_tokens)).seconds

    if step_s(1) > tpot_s:
        return 0
    lo, hi = 1, max_batch
    if step_s(hi) <= tpot_s:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if step_s(mid) <= tpot_s else (lo, mid)
    return lo


@dataclass(frozen=True)
class Ceilings:
    """The two ceilings on the running batch (KV memory, the TPOT target; the lower one binds) and
    the GEMMs' critical batch, which is a knee, not a ceiling: past it the time per token keeps
    falling towards its compute-bound floor, so throughput still rises, only more slowly."""

    kv_memory: float  # sequences whose KV fits in the pool
    compute_ridge: float  # the knee: the GEMMs' critical batch (weights no longer amortise for free)
    latency: float  # largest batch whose step meets the TPOT target

    def as_dict(self) -> dict[str, float]:
        """The ceilings only (the knee limits nothing)."""
        return {"KV memory": self.kv_memory, "latency target": self.latency}

    @property
    def binding(self) -> str:
        d = self.as_dict()
        return min(d, key=d.get)

    @property
    def lowest(self) -> float:
        return min(self.as_dict().values())


def batch_ceilings(step_model: StepModel, context_len: float, pool_bytes: float, tpot_s: float,
                   output_tokens: float | None = None) -> Ceilings:
    """The two ceilings at `context_len` cached tokens per running sequence, and the knee, all in
    running sequences. Past the knee each extra sequence adds its full share of GEMM time to every
    step, so the step grows faster, but tokens per second still rise until the latency or KV
    ceiling stops them. Decode-only steps without `output_tokens`; with it, each step also carries
    its decodes' share of prompts (`steady_step_shape`), so the step has 1 + prompt / output GEMM
    rows per sequence and the knee falls to `step_model.critical_batch` / (1 + prompt / output)."""
    rows_per_seq = 1.0 if output_tokens is None else 1 + _mean_prompt(context_len, output_tokens) / output_tokens
    return Ceilings(
        kv_memory=sequences_that_fit(pool_bytes, step_model.model, context_len, step_model.precision.kv),
        compute_ridge=step_model.critical_batch / rows_per_seq,
        latency=batch_within(step_model, context_len, tpot_s, output_tokens=output_tokens),
    )


@dataclass(frozen=True)
class FixedPoint:
    """Iterates of N <- arrival_rate x output_tokens x step_time(N), and whether they settled."""

    iterates: list[float] = field(default_factory=list)
    converged: bool = False

    @property
    def batch(self) -> float:
        return self.iterates[-1]


def resident_batch(
    step_time_s: Callable[[float], float],
    arrival_rate: float,
    output_tokens: float,
    start: float = 1.0,
    rel_tol: float = 1e-9,
    max_iter: int = 200,
    cap: float = 1e6,
) -> FixedPoint:
    """Little's law with a duration that depends on the answer: a request stays for
    `output_tokens` steps, each as long as the step at the resident batch N, so
    N = lambda x O x t(N). Iterate from `start`; stop when the change is below `rel_tol`, or
    report no convergence when N passes `cap` or `max_iter` runs out (offered load above
    capacity: no fixed point exists and the queue grows without bound)."""
    _check_positive(arrival_rate=arrival_rate, output_tokens=output_tokens, start=start)
    n = start
    iterates = [n]
    for _ in range(max_iter):
        n_next = arrival_rate * output_tokens * step_time_s(n)
        iterates.append(n_next)
        if abs(n_next - n) <= rel_tol * n_next:
            return FixedPoint(iterates, True)
        if n_next > cap:
            break
        n = n_next
    return FixedPoint(iterates, False)


def _check_positive(**values):
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value}")
