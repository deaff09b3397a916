"""How long one forward step takes: the kit's roofline, reduced to four aggregates.

The kit prices a step as `decode_step(...) + prefill(...) + ...` and `step_time(cost, gpu, eff)`.
Every term of that cost is linear in a few sums over the sequences in the step, where sequence
i brings c_i new tokens on top of p_i tokens already in its KV cache (a decode is c_i = 1):

    T = sum c_i                  tokens in the step (matmul rows, KV written, activations)
    S = number of sequences      positions that compute logits
    P = sum p_i                  cached tokens read back as KV
    A = sum c_i p_i + c_i (c_i + 1) / 2     causal (query, key) pairs for attention

    FLOPs = 2 (N - V) T + 2 V S + 4 L H d A        (N matmul params per token, V = vocab x hidden)
    bytes = W(T) + kv (P + T) + act T

so the simulator evaluates the same model in O(1) per step. `tests/test_serving.py` checks this
equals `solutions.roofline.step_time` on random mixed steps, so there is one model, not two.

One deliberate difference: for a mixture-of-experts model the weights a step streams depend on
the step's *total* tokens (`weight_bytes_read(model, T)`): a mixed step is one forward pass. The
kit's `StepCost.__add__` takes the max over the parts instead; for dense models the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solutions.hardware import GPU
from solutions.models import Model
from solutions.roofline import IDEAL, Efficiency, StepCost, activation_bytes_per_token, weight_bytes_read


@dataclass(frozen=True)
class StepShape:
    """The four sums a step's cost depends on (see the module docstring)."""

    tokens: int
    seqs: int
    cached: float
    pairs: float


@dataclass(frozen=True)
class RooflineStepTime:
    """Seconds per step for `model` on `gpu`, with named efficiencies (`eff`) and `tp` GPUs."""

    model: Model
    gpu: GPU
    eff: Efficiency = IDEAL
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    dtype: str = "bf16"  # matmul input dtype: picks the peak FLOP/s
    tp: int = 1
    _k: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.tp, int) or self.tp < 1:
            raise ValueError(f"tp must be a positive integer, got {self.tp!r}")
        m = self.model
        body = m.matmul_params_per_token - m.embedding_params
        k = dict(
            flop_token=2.0 * body,
            flop_seq=2.0 * m.embedding_params,
            flop_pair=4.0 * m.n_attention * m.num_heads * m.head_dim,
            kv=m.kv_bytes_per_token(self.kv_dtype),
            act=activation_bytes_per_token(m),
            flops_per_s=self.tp * self.gpu.peak_flops(self.dtype) * self.eff.compute,
            bytes_per_s=self.tp * self.gpu.hbm_bytes_per_s * self.eff.memory,
            dense_weights=weight_bytes_read(m, 1, self.weight_dtype) if m.num_experts == 1 else None,
        )
        object.__setattr__(self, "_k", tuple(k.values()))

    def weight_bytes(self, tokens: int) -> float:
        dense = self._k[7]
        return dense if dense is not None else weight_bytes_read(self.model, tokens, self.weight_dtype)

    def cost(self, shape: StepShape) -> StepCost:
        """The step's FLOPs and bytes, as a kit `StepCost` (for MBU/MFU and the equality test)."""
        ft, fs, fp, kv, act, _, _, _ = self._k
        t = shape.tokens
        return StepCost(flops=ft * t + fs * shape.seqs + fp * shape.pairs, weight_bytes=self.weight_bytes(t),
                        kv_read_bytes=kv * shape.cached, kv_write_bytes=kv * t, activation_bytes=act * t, tokens=t)

    def seconds(self, tokens: int, seqs: int, cached: float, pairs: float) -> float:
        ft, fs, fp, kv, act, flops_per_s, bytes_per_s, dense = self._k
        w = dense if dense is not None else weight_bytes_read(self.model, tokens, self.weight_dtype)
        compute = (ft * tokens + fs * seqs + fp * pairs) / flops_per_s
        memory = (w + kv * (cached + tokens) + act * tokens) / bytes_per_s
        return (compute if compute > memory else memory) + self.eff.overhead_s

    def __call__(self, plan) -> float:
        return self.seconds(plan.tokens, plan.seqs, plan.cached, plan.pairs)

    def decode_run_seconds(self, batch: int, cached: np.ndarray) -> np.ndarray:
        """Seconds of consecutive decode-only steps of `batch` sequences holding `cached` tokens
        in total at each step (the same formula as `seconds`, over an array)."""
        ft, fs, fp, kv, act, flops_per_s, bytes_per_s, dense = self._k
        w = dense if dense is not None else weight_bytes_read(self.model, batch, self.weight_dtype)
        compute = (ft * batch + fs * batch + fp * (cached + batch)) / flops_per_s
        memory = (w + kv * (cached + batch) + act * batch) / bytes_per_s
        return np.maximum(compute, memory) + self.eff.overhead_s

    def decode_seconds(self, batch: int, context_len: float) -> float:
        """A pure decode step: `batch` sequences, each `context_len` tokens cached."""
        return self.seconds(batch, batch, batch * context_len, batch * (context_len + 1))


@dataclass(frozen=True)
class ServiceTime:
    """Single-server mode: a step serves one job and lasts that job's own service time."""

    service_s: list  # seconds, indexed by request id

    def __call__(self, plan) -> float:
        (rid, _, _), = plan.chunks  # exactly one job per step
        return self.service_s[rid]
