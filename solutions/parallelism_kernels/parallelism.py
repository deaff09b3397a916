"""Tensor vs pipeline parallelism for decode, priced from the kit's one step model.

Tensor parallelism (TP) splits every layer across the GPUs: each step reads 1/n of the weights
per GPU and pays two all-reduces per layer (`StepModel` with tp=n prices both). Pipeline
parallelism (PP) gives each GPU a contiguous block of layers: a token crosses the stages one
after another, so its latency is the sum of the stages; throughput comes from keeping one
microbatch in every stage at once.

A stage of `tp` GPUs is priced as its share of a whole-model step at that TP degree: the step
model's per-layer time (GEMMs, attention, elementwise, all-reduce, summed over layers) times the
stage's layers (`stage_layers`: vLLM's split, the extra layers kept off the first and last
stages), plus the LM head on the last stage; a hop between stages sends the microbatch's
activations point to point.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from solutions.capacity import stage_layers  # vLLM's split: the kit's one
from solutions.hardware import DTYPE_BYTES, GPU
from solutions.models import Model
from solutions.step_model import ACTIVATION_DTYPE, BF16, Interconnect, Precision, StepModel


@dataclass(frozen=True)
class PipelineDecode:
    """One decode microbatch of `microbatch` sequences flowing through the stages."""

    stage_s: tuple[float, ...]
    hop_s: float
    overhead_s: float
    microbatch: int

    @property
    def token_latency_s(self) -> float:
        """Time for one microbatch to cross every stage: each token's time per output token."""
        return sum(self.stage_s) + (len(self.stage_s) - 1) * self.hop_s + self.overhead_s

    @property
    def cycle_s(self) -> float:
        """Steady-state time between two microbatches leaving the last stage, with every stage busy."""
        return max(self.stage_s) + self.hop_s

    @property
    def in_flight(self) -> int:
        """Sequences in flight when one microbatch sits in every stage."""
        return self.microbatch * len(self.stage_s)

    @property
    def tokens_per_s(self) -> float:
        return self.microbatch / self.cycle_s


def hop_seconds(model: Model, tokens: float, latency_s: float, bytes_per_s: float) -> float:
    """Point-to-point send of `tokens` rows of hidden activations to the next stage."""
    return latency_s + tokens * model.hidden_size * DTYPE_BYTES[ACTIVATION_DTYPE] / bytes_per_s


@lru_cache(maxsize=64)
def _step_model(model: Model, gpu: GPU, tp: int, precision: Precision, allreduce: Interconnect | None) -> StepModel:
    overrides = {} if allreduce is None else {"interconnect": allreduce}
    return StepModel.of(model, gpu, tp=tp, precision=precision, **overrides)


def pipeline_decode(model: Model, gpu: GPU, stages: int, microbatch: int, context_len: float,
                    precision: Precision = BF16, tp: int = 1, allreduce: Interconnect | None = None,
                    hop_latency_s: float | None = None, hop_bytes_per_s: float | None = None) -> PipelineDecode:
    """Price a decode microbatch through `stages` pipeline stages of `tp` GPUs each.

    `allreduce` is the TP link inside a stage (default: the step model's); a hop defaults to the
    all-reduce link's latency plus one direction of the GPU's NVLink (stages in one node)."""
    if type(microbatch) is not int or microbatch < 1:
        raise ValueError(f"microbatch must be a positive int, got {microbatch!r}")
    step = _step_model(model, gpu, tp, precision, allreduce).decode(microbatch, context_len)
    per_layer = (step.gemm_s + step.attention_s + step.elementwise_s + step.allreduce_s) / model.num_layers
    layers = stage_layers(model.num_layers, stages)
    stage_s = [per_layer * n for n in layers]
    stage_s[-1] += step.lm_head_s
    if hop_latency_s is None:
        from solutions.step_defaults import interconnect
        link = allreduce or interconnect(gpu)
        hop_latency_s = link.latency_s
    if hop_bytes_per_s is None:
        hop_bytes_per_s = gpu.nvlink_unidir_bytes_per_s
    hop = hop_seconds(model, microbatch, hop_latency_s, hop_bytes_per_s) if stages > 1 else 0.0
    return PipelineDecode(tuple(stage_s), hop, step.overhead_s, microbatch)
