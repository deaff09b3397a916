"""What `StepModel.of` assumes when you name only a model and a GPU: the kernel fit, the
tensor-parallel link as an all-reduce sees it, and the per-step time outside kernels.

Each default is a measurement or a fit on one, with its source; docs/fidelity.ipynb tests them
on measurements they were not fitted on.
"""

from __future__ import annotations

import numpy as np

from solutions.hardware import GPU
from solutions.step_model import Interconnect, KernelFit

# Per-step time outside the kernels of a CUDA-graph engine: scheduling the step, preparing its
# inputs, sampling and the gaps between graph launches. An assumption, sized to vLLM v1's own
# account (GPU work of Llama-8B on an H100 is ~5 ms a step, and CPU overhead was the reason for v1's
# re-architecture: vllm-project.github.io _posts/2025-01-24-v1.md, "Optimized Execution Loop");
# docs/fidelity.ipynb checks it against published end-to-end runs.
STEP_OVERHEAD_S = 0.5e-3

# Time a request spends in the serving stack outside the engine's steps, paid once before its first
# token: the HTTP request, tokenising the prompt, handing it to the engine core, detokenising and
# streaming the first token back. vLLM v1 runs these in the API-server process, off the engine's
# busy loop (vllm-project.github.io _posts/2025-01-24-v1.md, "Optimized Execution Loop & API
# Server"), so they add to TTFT but do not slow the steps. An assumption, checked in
# docs/fidelity.ipynb against the TTFT of published runs at low load.
SERVING_STACK_S = 3e-3

# Measured all-reduce latency of vLLM's custom all-reduce (bf16, no CUDA graph), message bytes -> us.
# H100, TP 8: sgl-project/sglang PR 2904 ("optimize custom allreduce kernel"), table "vllm".
# A100, TP 4: sgl-project/sglang PR 2688 ("Support twoshot kernel"), "vllm time" column.
ALLREDUCE_MEASURED_US = {
    "H100 TP8 (sglang PR 2904)": {512: 10.1, 4096: 9.3, 32768: 11.8, 262144: 24.1, 524288: 30.4, 1048576: 45.0},
    "A100 TP4 (sglang PR 2688)": {512: 13.5, 4096: 12.1, 32768: 13.5, 262144: 23.9, 524288: 31.3, 1048576: 47.1},
}
ALLREDUCE_GPUS = {"H100 TP8 (sglang PR 2904)": 8, "A100 TP4 (sglang PR 2688)": 4}


def fit_interconnect(measured_us: dict[int, float], gpus: int, source: str) -> Interconnect:
    """Least-squares line through measured (message bytes, microseconds): the intercept is the
    latency, the slope the ring's bus bandwidth (time = latency + 2 (n-1)/n x bytes / bus)."""
    m = np.array(list(measured_us), dtype=float)
    t = np.array(list(measured_us.values())) * 1e-6
    slope, intercept = np.polyfit(2 * (gpus - 1) / gpus * m, t, 1)
    return Interconnect(latency_s=float(intercept), bus_bytes_per_s=float(1 / slope), source=source)


HOPPER_NVLINK = fit_interconnect(ALLREDUCE_MEASURED_US["H100 TP8 (sglang PR 2904)"], 8,
                                 "fit to vLLM custom all-reduce on 8x H100 (sglang PR 2904 table), "
                                 "messages 512 B - 1 MiB")
AMPERE_NVLINK = fit_interconnect(ALLREDUCE_MEASURED_US["A100 TP4 (sglang PR 2688)"], 4,
                                 "fit to vLLM custom all-reduce on 4x A100 (sglang PR 2688 table), "
                                 "messages 512 B - 1 MiB")


def interconnect(gpu: GPU) -> Interconnect | None:
    """The all-reduce link for `gpu`'s generation; None where the kit has no measurement (PCIe
    cards), so a tensor-parallel StepModel on them must be given one explicitly."""
    if gpu.nvlink_bidir_gb_s is None or "PCIe" in gpu.name:
        return None
    return AMPERE_NVLINK if gpu.name.startswith("A100") else HOPPER_NVLINK


def kernel_fit(gpu: GPU) -> KernelFit:
    """Fractions of peak per kernel class. Fitted on A100 kernels (`solutions.calibration`);
    on other GPUs the same fractions are an assumption that docs/fidelity.ipynb tests."""
    from solutions.calibration import A100_FIT

    return A100_FIT
