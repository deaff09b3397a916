"""How many sequences one GPU can run at once, and why: the KV pool, the step-time line, the
three batch ceilings (KV memory, compute ridge, latency target) and the Little's-law batch.

Memory sizes here are bytes; pools are usually *printed* in GiB because vLLM logs them that
way (its total comes from torch in bytes). Rates and datasheet capacities stay decimal.

Everything assumes a dense model: its decode step is then exactly linear in the batch
(an MoE reads more experts as the batch grows, so its step time is not a line).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from solutions.hardware import GPU
from solutions.models import Model
from solutions.roofline import IDEAL, Efficiency, compute_time, decode_step, memory_time
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

# vLLM's default share of GPU memory: vllm-project/vllm@c1d86421174a87056edc90a41dc9942391509e84:
# vllm/config/cache.py, CacheConfig.gpu_memory_utilization = Field(default=0.9, ...).
VLLM_GPU_MEMORY_UTILIZATION = 0.9

# Round fractions of peak that measured A100 kernels reach (Vidur's profiles): the kit's fit,
# `solutions.calibration.A100_FIT`, puts GEMMs at 0.71 of peak FLOP/s and 0.78 of peak bandwidth
# and decode attention at 0.83 of peak bandwidth. Assumed to carry over to Hopper. Kernel floors
# (the fit's overhead_s) are left out: they are a separate, named assumption where a notebook uses them.
DECODE_EFFICIENCY = Efficiency(compute=0.70, memory=0.80)


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
    everything else the profile run measures (activation peak, CUDA graphs, NCCL, allocator).
    `non_kv_bytes` is that "everything else": an assumption here, a measurement in vLLM."""
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


def sequences_that_fit(pool_bytes: float, model: Model, context_len: float, kv_dtype: str = "bf16") -> int:
    """Whole sequences of `context_len` cached tokens the pool holds (block rounding ignored:
    it wastes less than one block per sequence)."""
    _check_positive(pool_bytes=pool_bytes, context_len=context_len)
    return math.floor(pool_bytes / (context_len * model.kv_bytes_per_token(kv_dtype)))


@dataclass(frozen=True)
class StepLine:
    """A dense decode step as two lines in the batch B (seconds):
    memory   t_mem(B)  = fixed_s + B * per_seq_memory_s   (weights once, then KV per sequence)
    compute  t_comp(B) = B * per_seq_compute_s
    step     t(B)      = max(t_mem, t_comp) + overhead_s"""

    fixed_s: float
    per_seq_memory_s: float
    per_seq_compute_s: float
    overhead_s: float = 0.0

    def step_time(self, batch: float) -> float:
        return max(self.fixed_s + batch * self.per_seq_memory_s, batch * self.per_seq_compute_s) + self.overhead_s

    def throughput(self, batch: float) -> float:
        """Tokens per second: one token per sequence per step."""
        return batch / self.step_time(batch)

    @property
    def knee(self) -> float:
        """Batch where the memory time of one extra sequence equals the weights' time:
        throughput reaches half its bandwidth asymptote (B = fixed / per-seq memory)."""
        return self.fixed_s / self.per_seq_memory_s

    @property
    def ridge(self) -> float:
        """Batch where compute time catches up with memory time; inf if it never does."""
        gap = self.per_seq_compute_s - self.per_seq_memory_s
        return self.fixed_s / gap if gap > 0 else math.inf

    @property
    def bandwidth_ceiling(self) -> float:
        """Tokens/s the memory line tends to as B grows: 1 / per-seq memory time."""
        return 1 / self.per_seq_memory_s

    @property
    def compute_ceiling(self) -> float:
        """Tokens/s when the tensor cores are the limit: 1 / per-seq compute time."""
        return 1 / self.per_seq_compute_s

    def batch_within(self, tpot_s: float) -> float:
        """Largest (real) batch whose step fits in `tpot_s`; 0 if not even one sequence does."""
        _check_positive(tpot_s=tpot_s)
        budget = tpot_s - self.overhead_s
        if budget <= self.fixed_s + self.per_seq_memory_s:
            return 0.0
        return min((budget - self.fixed_s) / self.per_seq_memory_s, budget / self.per_seq_compute_s)


def step_line(
    model: Model, gpu: GPU, context_len: float, eff: Efficiency = IDEAL, extra=None,
) -> StepLine:
    """Fit the line exactly from the kit's decode step at B=1 and B=2 (it is linear in B for a
    dense model). `extra(batch)` may add per-sequence work to every step as a StepCost (e.g.
    the prefill that rides along with each decode step, q08); it must be linear in batch too."""
    if model.num_experts > 1:
        raise ValueError(f"step_line assumes a dense model; {model.name} is a mixture of experts")

    def cost(b):
        c = decode_step(model, b, context_len)
        return c if extra is None else c + extra(b)

    one, two = cost(1), cost(2)
    mem1, mem2 = memory_time(one, gpu, eff), memory_time(two, gpu, eff)
    per_seq_memory = mem2 - mem1
    return StepLine(
        fixed_s=mem1 - per_seq_memory,
        per_seq_memory_s=per_seq_memory,
        per_seq_compute_s=compute_time(two, gpu, eff) - compute_time(one, gpu, eff),
        overhead_s=eff.overhead_s,
    )


@dataclass(frozen=True)
class Ceilings:
    """The three limits on the running batch; the smallest one is the one that binds."""

    kv_memory: float  # sequences whose KV fits in the pool
    compute_ridge: float  # past this, more sequences add latency, not throughput
    latency: float  # largest batch whose step meets the TPOT target

    def as_dict(self) -> dict[str, float]:
        return {"KV memory": self.kv_memory, "compute ridge": self.compute_ridge, "latency target": self.latency}

    @property
    def binding(self) -> str:
        d = self.as_dict()
        return min(d, key=d.get)

    @property
    def lowest(self) -> float:
        return min(self.as_dict().values())


def batch_ceilings(
    model: Model, gpu: GPU, context_len: float, pool_bytes: float, tpot_s: float,
    eff: Efficiency = IDEAL, kv_dtype: str = "bf16",
) -> Ceilings:
    line = step_line(model, gpu, context_len, eff)
    return Ceilings(
        kv_memory=sequences_that_fit(pool_bytes, model, context_len, kv_dtype),
        compute_ridge=line.ridge,
        latency=line.batch_within(tpot_s),
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
