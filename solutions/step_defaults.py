"""What `StepModel.of` assumes when you name only a model and a GPU: the kernel fit, the
tensor-parallel link as an all-reduce sees it, and the per-step time outside kernels.

Each default is a measurement or a fit on one, with its source; docs/fidelity.ipynb tests them
on measurements they were not fitted on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solutions.hardware import GPU
from solutions.roofline import Efficiency


@dataclass(frozen=True)
class KernelFit:
    """One `Efficiency` per kernel class; each `overhead_s` is a floor paid per kernel launch."""

    gemm: Efficiency
    attention: Efficiency
    elementwise: Efficiency
    source: str


@dataclass(frozen=True)
class Interconnect:
    """The tensor-parallel link as an all-reduce sees it: a latency per collective and the bus
    bandwidth a ring reaches (bytes each GPU sends per second), so a ring all-reduce of m bytes
    over n GPUs takes latency + 2 (n - 1) / n x m / bus bandwidth. The latency and the small-message
    bandwidth are fitted on measured decode-sized all-reduces (up to `large_from_bytes`); bigger
    messages run the bandwidth-optimal algorithms (vLLM's two-shot custom all-reduce below 8 MiB,
    NCCL's ring above: `vllm==0.33.0:vllm/distributed/device_communicators/custom_all_reduce.py`
    `max_size=8192 * 1024,`, checked in `def should_custom_ar(self, inp: torch.Tensor):`), so with `large_bus_bytes_per_s` given, the bytes beyond the measured range
    move at that bandwidth (continuous in the message size)."""

    latency_s: float
    bus_bytes_per_s: float
    source: str
    large_bus_bytes_per_s: float | None = None
    large_from_bytes: float = 1024 * 1024

    def __post_init__(self):
        if self.latency_s < 0 or self.bus_bytes_per_s <= 0 or (self.large_bus_bytes_per_s or 1) <= 0:
            raise ValueError(f"Interconnect needs latency_s >= 0 and positive bandwidths, got {self.latency_s}, "
                             f"{self.bus_bytes_per_s}, {self.large_bus_bytes_per_s}")

    def allreduce_s(self, message_bytes, gpus: int):
        if gpus <= 1:
            return 0.0
        share = 2 * (gpus - 1) / gpus  # bytes each GPU sends per message byte in a ring
        if self.large_bus_bytes_per_s is None:
            return self.latency_s + share * message_bytes / self.bus_bytes_per_s
        small = np.minimum(message_bytes, self.large_from_bytes)
        beyond = message_bytes - small
        return (self.latency_s + share * small / self.bus_bytes_per_s
                + share * beyond / self.large_bus_bytes_per_s)

# Per-step time outside the kernels of a CUDA-graph engine: scheduling the step, preparing its
# inputs, sampling and the gaps between graph launches. Fitted (solutions.calibration.fidelity.fit_overheads) on
# ONE published run, vLLM v0.11.0 serving Qwen3-8B on one H100 at concurrency 1 (median TPOT
# 7.22 ms; solutions/calibration/vllm_serving_runs.py, FIT_RUN): what is left of TPOT after the step model's
# kernels. It is small because vLLM v1 overlaps most CPU work with the GPU (vllm-project.github.io
# _posts/2025-01-24-v1.md, "Optimized Execution Loop") and because it also absorbs what the kernel
# floors, fitted on eager-mode profiles, overstate under CUDA graphs. docs/fidelity.ipynb tests it
# on the other published runs.
STEP_OVERHEAD_S = 0.24e-3

# Time a request spends in the serving stack outside the engine's steps, paid once before its first
# token: the HTTP request, the chat template, tokenising the prompt, handing it to the engine core,
# detokenising and streaming the first token back. vLLM v1 runs these in the API-server process, off
# the engine's busy loop (same post, "Optimized Execution Loop & API Server"), so they add to TTFT
# but do not slow the steps. Fitted on the same one run (median TTFT 60.4 ms, of which the
# simulator's prefill is ~8 ms): a `vllm serve` chat endpoint, measured by `vllm bench serve` on
# the same host. The same lab's SGLang run of that benchmark has a 27 ms median TTFT, prefill
# included, so it is an engine and front-end property, not physics.
SERVING_STACK_S = 53e-3

# Measured all-reduce latency of vLLM's custom all-reduce (bf16, no CUDA graph), message bytes -> us.
# H100, TP 8: sgl-project/sglang PR 2904 ("optimize custom allreduce kernel"), table "vllm".
# A100, TP 4: sgl-project/sglang PR 2688 ("Support twoshot kernel"), "vllm time" column.
ALLREDUCE_MEASURED_US = {
    "H100 TP8 (sglang PR 2904)": {512: 10.1, 4096: 9.3, 32768: 11.8, 262144: 24.1, 524288: 30.4, 1048576: 45.0},
    "A100 TP4 (sglang PR 2688)": {512: 13.5, 4096: 12.1, 32768: 13.5, 262144: 23.9, 524288: 31.3, 1048576: 47.1},
}
ALLREDUCE_GPUS = {"H100 TP8 (sglang PR 2904)": 8, "A100 TP4 (sglang PR 2688)": 4}


# Large messages (prefill: thousands of tokens x hidden x 2 bytes) go over NCCL's ring, which reaches
# about 370 GB/s of bus bandwidth on H100 NVLink against a 450 GB/s line rate ("with the protocol
# overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s": NCCL maintainer,
# NVIDIA/nccl-tests issue 212). The same 0.82 of the line rate is ASSUMED for the A100's NVLink 3.
NCCL_RING_FRACTION_OF_NVLINK = 370 / 450


def fit_interconnect(measured_us: dict[int, float], gpus: int, source: str,
                     large_bus_bytes_per_s: float | None = None) -> Interconnect:
    """Least-squares line through measured (message bytes, microseconds): the intercept is the
    latency, the slope the ring's bus bandwidth (time = latency + 2 (n-1)/n x bytes / bus)."""
    m = np.array(list(measured_us), dtype=float)
    t = np.array(list(measured_us.values())) * 1e-6
    slope, intercept = np.polyfit(2 * (gpus - 1) / gpus * m, t, 1)
    return Interconnect(latency_s=float(intercept), bus_bytes_per_s=float(1 / slope), source=source,
                        large_bus_bytes_per_s=large_bus_bytes_per_s)


HOPPER_NVLINK = fit_interconnect(ALLREDUCE_MEASURED_US["H100 TP8 (sglang PR 2904)"], 8,
                                 "fit to vLLM custom all-reduce on 8x H100 (sglang PR 2904 table), "
                                 "messages 512 B - 1 MiB; large messages at NCCL's ring bandwidth",
                                 NCCL_RING_FRACTION_OF_NVLINK * 450e9)
AMPERE_NVLINK = fit_interconnect(ALLREDUCE_MEASURED_US["A100 TP4 (sglang PR 2688)"], 4,
                                 "fit to vLLM custom all-reduce on 4x A100 (sglang PR 2688 table), "
                                 "messages 512 B - 1 MiB; large messages at NCCL's ring bandwidth (assumed "
                                 "the H100's fraction of line rate)",
                                 NCCL_RING_FRACTION_OF_NVLINK * 300e9)


def interconnect(gpu: GPU) -> Interconnect | None:
    """The all-reduce link for `gpu`'s generation; None where the kit has no measurement (PCIe
    cards), so a tensor-parallel StepModel on them must be given one explicitly."""
    if gpu.nvlink_bidir_gb_s is None or "PCIe" in gpu.name:
        return None
    return AMPERE_NVLINK if gpu.name.startswith("A100") else HOPPER_NVLINK


# Fitted by `fit_a100()` on the training split (tests/test_calibration.py re-runs the fit and
# checks these values, and the held-out errors, against the data in solutions/calibration/a100_profiles.py).
A100_FIT = KernelFit(
    gemm=Efficiency(compute=0.71, memory=0.78, overhead_s=6.0e-6),
    attention=Efficiency(compute=0.71, memory=0.84, overhead_s=17.5e-6),
    elementwise=Efficiency(compute=1.0, memory=0.48, overhead_s=1.5e-6, row_bytes_per_s=8.9e9),
    source="fit_a100(): least squares in log time on Vidur's A100 profiles (solutions/calibration/a100_profiles.py), "
    "GEMMs on Llama-2 7B, CodeLlama-34B, Qwen-72B at TP 1-8; decode attention on contexts <= 2,112; "
    "attention compute (no prefill-attention profile) set to the GEMM fraction",
)


# ---- kernel fits ------------------------------------------------------------------------------
# Hopper attention from published H100 kernels (calibration.vllm_regime.fit_hopper_attention):
# FlashAttention-3 forward at 1K/4K/16K tokens (pytorch/benchmark PR 2391) and vLLM's FA3 fork at
# decode batch 1 (vllm-project/flash-attention PR 63); solutions/calibration/h100_attention.py.
HOPPER_ATTENTION = Efficiency(compute=0.60, memory=0.87, overhead_s=14.0e-6)

# Hopper GEMMs and elementwise kernels: the same least-squares fit as `calibration.fit_a100`, on
# Vidur's H100 profiles (solutions/calibration/h100_profiles.py), priced on the H100 SXM. Fitted on
# three layer shapes; Llama-2-70B (the layer shape of the kit's Llama 3.x 70B) and InternLM-20B are
# held out and tested in docs/fidelity.ipynb. Attention: `HOPPER_ATTENTION` (the store holds no
# H100 attention profile from Vidur).
HOPPER_FIT = KernelFit(
    gemm=Efficiency(compute=0.68, memory=0.91, overhead_s=5.5e-6),
    attention=HOPPER_ATTENTION,
    elementwise=Efficiency(compute=1.0, memory=0.55, overhead_s=1.0e-6, row_bytes_per_s=10.5e9),
    source="fit_h100(): least squares in log time on Vidur's H100 profiles (solutions/calibration/h100_profiles.py), "
    "GEMMs and elementwise kernels of Llama-2-7B, CodeLlama-34B, Qwen-72B at TP 1-8 priced on the H100 SXM; "
    "attention: HOPPER_ATTENTION, fitted on published H100 FlashAttention-3 kernels",
)


def kernel_fit(gpu: GPU) -> KernelFit:
    """Fractions of peak per kernel class: fitted on H100 kernels for Hopper (H100, H200), on
    A100 kernels for every other GPU. Carrying a fit to a GPU it was not measured on (H200, H100
    PCIe, B200, L40S) is an assumption that docs/fidelity.ipynb names."""
    return HOPPER_FIT if gpu.name.startswith(("H100", "H200")) else A100_FIT


# ---- the two named regimes ----------------------------------------------------------------------
# "kernel-ceiling": what every notebook prices with this session (the defaults above): the kernels
# at their fitted fractions plus one small constant per step, i.e. a well-tuned engine.
# "vllm-defaults": vLLM as it runs with every setting at its default. Its constants are fitted in
# solutions/calibration/vllm_regime.py (tests/test_vllm_regime.py re-runs the fits) on published
# measurements, and docs/fidelity.ipynb tests both regimes on runs neither was fitted on.
REGIMES = ("kernel-ceiling", "vllm-defaults")

@dataclass(frozen=True)
class StepOverheads:
    """Time outside the kernel ceiling: per step, constant_s + per_seq_s x requests + per_token_s x
    tokens; and the serving-stack time a request pays once before its first token."""

    constant_s: float
    per_seq_s: float
    per_token_s: float
    serving_stack_s: float
    source: str


# calibration.vllm_regime.fit_overheads(): replays of published vLLM v0.11.0 runs on one H100
# (calibration/vllm_serving_runs.py): constant on concurrency 1's TPOT, per request on concurrency
# 8's TPOT, per token on two saturated Qwen3-14B runs (ShareGPT burst, random 2K in); serving stack
# on concurrency 1 and 8's TTFT. The per-request term comes out ~0: one per-token term carries both
# the small-batch TPOT slope and most of the saturated gap. It is v0.11.0 at its defaults, which ran
# without async scheduling; 0.33.0 turns it on by default, and the same lab measured the flag alone
# buying 1-12% of throughput on v0.11.0's saturated runs (gpt-oss-20b on an A100,
# `vllm_serving_runs.ASYNC_SCHEDULING_TOTAL_TOK_S`): a hint, not a proof, that the gap to the kernel
# ceiling (1.7-1.8x) is mostly not CPU time async scheduling hides (docs/fidelity.ipynb, section 4).
VLLM_DEFAULTS = StepOverheads(
    constant_s=0.20e-3, per_seq_s=0.0, per_token_s=39e-6, serving_stack_s=46e-3,
    source="calibration.vllm_regime.fit_overheads() on GPUStack's vLLM v0.11.0 H100 runs",
)


def regime_args(gpu: GPU, regime: str, overheads: StepOverheads = VLLM_DEFAULTS) -> dict:
    """StepModel arguments that `regime` sets on `gpu` ({} for the kernel ceiling)."""
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    if regime == "kernel-ceiling":
        return {}
    return dict(overhead_s=overheads.constant_s, overhead_per_seq_s=overheads.per_seq_s,
                overhead_per_token_s=overheads.per_token_s)
