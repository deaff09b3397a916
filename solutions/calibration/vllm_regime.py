"""The "vllm-defaults" regime: vLLM as it runs with every setting at its default, beside the kit's
kernel ceiling (`StepModel.of(..., regime="vllm-defaults")`).

Both regimes price Hopper attention from published H100 attention kernels (`h100_attention`,
fitted here): prefill from FlashAttention-3's forward pass at 1K, 4K and 16K tokens (2K, 8K and
512 held out), decode from vLLM's FA3 fork at batch 1 (a second source, batch 16, held out).
What differs from the ceiling, fitted on published measurements and tested on others, is the
per-step time outside the kernel ceiling as a function of the step,
   overhead = a + b x requests + c x tokens, fitted by replaying published `vllm bench serve`
   runs (`calibration.vllm_serving_runs`) through the simulator: a on concurrency 1's TPOT, b on
   concurrency 8's TPOT, c on two saturated Qwen3-14B runs' throughput and TPOT (the ShareGPT
   burst and random 2K-in). Every other run is a test. The serving-stack time (the TTFT the
   steps leave unexplained) is fitted on concurrency 1 and 8 and tested on 2 and 4.

What the per-token term contains: everything a saturated vLLM step spends beyond the kernels at
their fitted fractions of peak, per scheduled token: input preparation and sampling that grow
with the batch, and whatever the kernels lose under sustained load (clocks under a power limit,
tile shapes the profiles never ran). The published numbers cannot separate them; an `nsys`
profile can (docs/fidelity.ipynb). The fit finds b ~ 0: one per-token term explains both the
small-batch TPOT slope and most of the saturated gap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solutions import models
from solutions.calibration import fidelity, h100_attention as data
from solutions.calibration.kernel_fits import FLOORS_S, FRACTIONS, fit_efficiency, kernel_time
from solutions.calibration.vllm_serving_runs import RUNS_BY_NAME
from solutions.hardware import GPUS, H100_SXM
from solutions.roofline import Efficiency, StepCost
from solutions.step_defaults import HOPPER_ATTENTION, VLLM_DEFAULTS, StepOverheads
from solutions.step_model import StepModel

PREFILL_FIT_SEQLENS = (1024, 4096, 16384)  # the other FA3 shapes are held out
FIT_RUNS_PER_TOKEN = ("Qwen3-14B ShareGPT, 1000 at once", "Qwen3-14B random 2000 in / 100 out, 500 at once")
FIT_RUN_PER_SEQ = "Qwen3-8B ShareGPT, concurrency 8"
FIT_RUN_CONSTANT = "Qwen3-8B ShareGPT, concurrency 1"
FIT_RUNS_STACK = ("Qwen3-8B ShareGPT, concurrency 1", "Qwen3-8B ShareGPT, concurrency 8")


# ---- Hopper attention (both regimes) -------------------------------------------------------------------------
@dataclass(frozen=True)
class AttentionPoint:
    kind: str  # "prefill" or "decode"
    label: str
    cost: StepCost
    measured_s: float
    held_out: bool
    source: str


def attention_points() -> list[AttentionPoint]:
    """Every published H100 attention measurement as a kit cost (FLOPs, bytes) and a time."""
    out = []
    for r in data.PREFILL:
        io = 4.0 * r.batch * r.seqlen * r.heads * r.head_dim * 2  # Q, K, V in, O out, 16-bit
        out.append(AttentionPoint("prefill", f"{r.batch} x {r.seqlen:,} tokens", StepCost(flops=r.flops, activation_bytes=io),
                                  r.seconds, r.seqlen not in PREFILL_FIT_SEQLENS, r.source))
    for rows, held in ((data.DECODE_VLLM_FA, False), (data.DECODE_FA_ISSUE, True)):
        for r in rows:
            flops = 4.0 * r.batch * r.q_heads * r.head_dim * r.context
            out.append(AttentionPoint("decode", f"batch {r.batch} x {r.context:,} cached, {r.kv_heads} KV heads",
                                      StepCost(flops=flops, kv_read_bytes=r.kv_bytes), r.seconds, held, r.source))
    return out


def fit_hopper_attention() -> Efficiency:
    """The attention `Efficiency` (compute and bandwidth fractions of the H100 SXM's peaks, one
    floor per kernel) that best fits the training points (least squares in log time)."""
    train = [p for p in attention_points() if not p.held_out]
    return fit_efficiency([p.cost for p in train], [p.measured_s for p in train], 1, FRACTIONS, FRACTIONS,
                          FLOORS_S, H100_SXM)




def attention_error(eff: Efficiency = HOPPER_ATTENTION) -> list[tuple[AttentionPoint, float]]:
    """(point, predicted / measured - 1) under `eff` on the H100."""
    return [(p, kernel_time(p.cost, eff, 1, H100_SXM) / p.measured_s - 1) for p in attention_points()]


# ---- time outside the kernels, and the serving stack ------------------------------------------
def _step_model(run, constant_s, per_seq_s, per_token_s):
    gpu = GPUS[run.gpu]
    return StepModel.of(getattr(models, run.model), gpu, run.tp, regime="vllm-defaults", overhead_s=constant_s,
                        overhead_per_seq_s=per_seq_s, overhead_per_token_s=per_token_s)


def replay(run, overheads: StepOverheads = VLLM_DEFAULTS, **kw):
    """`fidelity.replay` of a published run in the "vllm-defaults" regime."""
    sm = _step_model(run, overheads.constant_s, overheads.per_seq_s, overheads.per_token_s)
    return fidelity.replay(run, sm, overheads.serving_stack_s, **kw)


def _golden(f, lo, hi, steps=18):
    g = (math.sqrt(5) - 1) / 2
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    for _ in range(steps):
        if f1 < f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = f(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = f(x2)
    return (lo + hi) / 2


def fit_overheads(rounds: int = 2) -> StepOverheads:
    """Re-derive `VLLM_DEFAULTS` from the fit runs: coordinate descent, each coordinate a golden-
    section search on squared log error (per token: throughput and TPOT of the saturated runs;
    per request: TPOT at concurrency 8; constant: TPOT at concurrency 1); then the serving-stack
    time as the mean TTFT the steps leave unexplained on FIT_RUNS_STACK."""
    runs = RUNS_BY_NAME

    def err(name, a, b, c, metrics):
        p = fidelity.replay(runs[name], _step_model(runs[name], a, b, c), 0.0)
        return sum(math.log(p.ratio(m)) ** 2 for m in metrics)

    a, b, c = 0.18e-3, 0.0, 0.0
    for _ in range(rounds):
        c = _golden(lambda x: sum(err(n, a, b, x, ("output_tok_s", "median_tpot_ms")) for n in FIT_RUNS_PER_TOKEN),
                    0.0, 100e-6)
        b = _golden(lambda x: err(FIT_RUN_PER_SEQ, a, x, c, ("median_tpot_ms",)), 0.0, 60e-6)
        a = _golden(lambda x: err(FIT_RUN_CONSTANT, x, b, c, ("median_tpot_ms",)), 0.0, 0.5e-3)
    left = [runs[n].median_ttft_ms - fidelity.replay(runs[n], _step_model(runs[n], a, b, c), 0.0).median_ttft_ms
            for n in FIT_RUNS_STACK]
    return StepOverheads(a, b, c, sum(left) / len(left) * 1e-3, VLLM_DEFAULTS.source)
