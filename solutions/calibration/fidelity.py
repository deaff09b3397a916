"""Predicted against measured where the fit never looked: H100 kernels (another GPU) and
published end-to-end serving runs. docs/fidelity.ipynb shows these; tests/test_calibration.py
pins them.

A kernel fit is tested on layer shapes it was not fitted on; the A100-to-H100 transfer error is
the A100 fit priced on the H100 against the H100 profiles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solutions.calibration import kernel_fits as cal
from solutions import models, step_defaults
from solutions.calibration import h100_profiles
from solutions.calibration.vllm_serving_runs import RUNS, ServingRun
from solutions.hardware import GPU, GPUS, H100_SXM
from solutions.models import Model
from solutions.roofline import IDEAL
from solutions.serving import LogNormal, Replica, Workload, simulate
from solutions.calibration.kernel_fits import H100_HELD_OUT_MODELS
from solutions.step_defaults import HOPPER_FIT
from solutions.step_model import GEMMS_PER_LAYER, KernelFit, StepModel, elementwise_layer_s, gemm_layer_cost


def layer_time(model: Model, tokens: int, tp: int, fit: KernelFit, gpu: GPU) -> float:
    """One layer's four weight GEMMs and five elementwise kernels on one shard, as the step model
    prices them (attention excluded: the mlp.csv profiles do not hold it)."""
    return (cal.kernel_time(gemm_layer_cost(model, tokens, tp), fit.gemm, GEMMS_PER_LAYER, gpu)
            + float(elementwise_layer_s(model, tokens, tp, fit.elementwise, gpu)))


def h100_points(fit: KernelFit = HOPPER_FIT, gpu: GPU = H100_SXM) -> list[cal.Point]:
    """Every H100 layer measurement (GEMMs + elementwise) beside its prediction under `fit`:
    "decode layer" up to calibration.DECODE_MAX_TOKENS tokens, "prefill layer" above; held out
    when its model is one the Hopper fit never saw."""
    out = []
    for r in h100_profiles.LINEAR:
        model = cal.profiled_model(r.shape)
        out.append(cal.Point(
            kind="decode layer" if r.num_tokens <= cal.DECODE_MAX_TOKENS else "prefill layer",
            model=r.model, tp=r.tp, tokens=r.num_tokens, context_len=0,
            measured_s=(r.linear_total_ms + cal._elementwise_ms(r)) * 1e-3,
            naive_s=layer_time(model, r.num_tokens, r.tp, _ideal(), gpu),
            calibrated_s=layer_time(model, r.num_tokens, r.tp, fit, gpu),
            held_out=r.model in H100_HELD_OUT_MODELS, source=r.source))
    return out


def _ideal() -> KernelFit:
    return KernelFit(gemm=IDEAL, attention=IDEAL, elementwise=IDEAL, source="datasheet peaks, no floors")


# ---- end to end: a published serving run replayed through the simulator ----------------------
SHAREGPT_CV = 1.0  # assumed spread of ShareGPT prompt and output lengths (only their totals are published)


@dataclass(frozen=True)
class Replay:
    """What the simulator predicts for a published run, in the benchmark's own terms."""

    run: ServingRun
    duration_s: float
    output_tok_s: float
    median_ttft_ms: float
    median_tpot_ms: float
    prefill_tokens: int  # prompt tokens the simulated engine computed, recomputes after preemption included
    preempted_requests: int

    def ratio(self, metric: str) -> float:
        """Predicted / measured for "output_tok_s", "median_ttft_ms" or "median_tpot_ms"."""
        return getattr(self, metric) / getattr(self.run, metric)


def run_workload(run: ServingRun, seed: int = 0, sharegpt_cv: float = SHAREGPT_CV) -> Workload:
    """The run's requests, all arriving at t = 0. Random-dataset runs have fixed lengths (the
    published totals over the prompts); ShareGPT lengths are drawn log-normal around the published
    means (SHAREGPT_CV), cut to what `vllm bench serve` keeps (prompt 4-1024 tokens, prompt +
    output <= 2048) and rescaled so the totals match the run's."""
    n = run.num_prompts
    if run.dataset == "random":
        return Workload(np.zeros(n), round(run.mean_input), round(run.mean_output))
    rng = np.random.default_rng(seed)
    prompt = np.clip(LogNormal(run.mean_input, sharegpt_cv).sample(n, rng), 4, 1024)
    output = np.clip(LogNormal(run.mean_output, sharegpt_cv).sample(n, rng), 4, 2048 - prompt)
    prompt = np.maximum(4, np.rint(prompt * run.input_tokens / prompt.sum()))
    output = np.maximum(4, np.rint(output * run.output_tokens / output.sum()))
    return Workload(np.zeros(n), prompt.astype(int), output.astype(int))


def replay(run: ServingRun, step_model: StepModel | None = None, serving_stack_s: float | None = None,
           seed: int = 0, sharegpt_cv: float = SHAREGPT_CV) -> Replay:
    """Simulate `run` on the kit's defaults (or the given step model / serving-stack time).

    A closed-loop run (max_concurrency C) is simulated as every request queued at t = 0 with
    max_num_seqs = C: C in flight, the next admitted as one finishes. The client measures from
    when it sends, so its TTFT excludes that queueing, and a slot stays empty while a request
    is in the serving stack: the run lasts sum(E2E - queueing) / C."""
    model, gpu = getattr(models, run.model), GPUS[run.gpu]
    sm = step_model or StepModel.of(model, gpu, run.tp)
    stack = step_defaults.SERVING_STACK_S if serving_stack_s is None else serving_stack_s
    batched_tokens, max_seqs = vllm_serve_defaults(gpu)
    replica = Replica.of(model, gpu, run.tp, step_model=sm, max_num_batched_tokens=batched_tokens,
                         max_num_seqs=run.max_concurrency or max_seqs, serving_stack_s=stack)
    res = simulate(run_workload(run, seed, sharegpt_cv), replica)
    if run.max_concurrency:
        queued = res.queue_wait
        duration = float((res.e2e - queued).sum()) / run.max_concurrency
        ttft = res.ttft - queued
    else:
        duration, ttft = res.span_s + stack, res.ttft
    return Replay(run, duration, float(res.output_tokens.sum()) / duration, float(np.median(ttft)) * 1e3,
                  float(np.nanmedian(res.tpot)) * 1e3, int(np.sum(res.steps["prefill_tokens"])),
                  int((res.preemptions > 0).sum()))


def measured_vllm_gap(gpu: GPU) -> tuple[float, float]:
    """(lowest, highest) ratio of the kit's kernel-ceiling throughput to vLLM's measured one over the published
    saturated runs on `gpu` with prompts of 100-10,000 tokens (`--request-rate inf`, no concurrency cap;
    docs/fidelity.ipynb), the selection q08 reads. Data, not a fit: divide a kernel-ceiling capacity by it to
    size vLLM at its defaults, beside the fitted "vllm-defaults" regime (q30, q32, q33). The runs are base
    models (Qwen3-14B on H100); each is replayed on the kernel ceiling (`replay`'s default)."""
    runs = [r for r in RUNS if r.gpu == gpu.name and not r.max_concurrency and 100 < r.mean_input < 10_000 and r.mean_output > 4]
    if not runs:
        raise ValueError(f"no published saturated run on {gpu.name}")
    gaps = [replay(r).ratio("output_tok_s") for r in runs]
    return min(gaps), max(gaps)


def vllm_serve_defaults(gpu: GPU) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) that `vllm serve` picks for `gpu` in vLLM 0.33.0's
    three memory tiers, OPENAI_API_SERVER usage context: 16,384 and 1,024 from 160 GiB, B200-class
    (`vllm==0.33.0:vllm/engine/arg_utils.py` `if device_memory >= 160 * GiB_bytes:`); 8,192 and
    1,024 from 70 GiB on a GPU that is not an A100 (`vllm==0.33.0:vllm/engine/arg_utils.py`
    `# For GPUs like H100 and H200, use larger offline defaults.`); else 2,048 and 256
    (`vllm==0.33.0:vllm/engine/arg_utils.py` `# TODO(woosuk): Tune the default values for other hardware.`).
    The datasheet capacity stands in for what the driver reports."""
    memory = gpu.hbm_capacity_bytes
    if memory >= 160 * 2**30:
        return 16384, 1024
    large = memory >= 70 * 2**30 and "A100" not in gpu.name
    return (8192, 1024) if large else (2048, 256)


def fit_overheads(run: ServingRun) -> tuple[float, float]:
    """(per-step overhead, serving-stack time) that make the simulator reproduce `run`'s median
    TPOT and median TTFT. TPOT is linear in the per-step overhead (every decode step pays it once),
    so two replays pin it; the serving-stack time is the TTFT the engine's steps leave unexplained."""
    model, gpu = getattr(models, run.model), GPUS[run.gpu]

    def tpot_ms(overhead_s):
        return replay(run, StepModel.of(model, gpu, run.tp, overhead_s=overhead_s), 0.0).median_tpot_ms

    at0, at1 = tpot_ms(0.0), tpot_ms(1e-3)
    overhead_s = (run.median_tpot_ms - at0) / (at1 - at0) * 1e-3
    fitted = replay(run, StepModel.of(model, gpu, run.tp, overhead_s=overhead_s), 0.0)
    return overhead_s, (run.median_ttft_ms - fitted.median_ttft_ms) * 1e-3


# ---- the kernel ceiling against TensorRT-LLM's published max-load throughput ----------------------
def trtllm_replay(isl: int, osl: int, requests: int | None = None, kv_dtype: str = "fp8",
                  gpu_memory_utilization: float | None = None, regime: str = "kernel-ceiling") -> float:
    """Simulated / published output throughput for one `trtllm_runs` case (Llama 3.1 8B, FP8
    W8A8, one H100): every request queued at t = 0 with fixed lengths, the kit's replica at vLLM's
    scheduler defaults, KV in `kv_dtype` (FP8 assumed: ModelOpt's FP8 checkpoints quantise it) at
    the page's 0.95 KV share unless given. `requests` defaults to the page's count."""
    from solutions.calibration import trtllm_runs
    from solutions.hardware import H100_SXM
    from solutions.models import LLAMA_3_1_8B
    from solutions.step_model import Precision

    precision = Precision(f"FP8 W8A8, {kv_dtype} KV", weight="fp8", math="fp8", kv=kv_dtype)
    util = trtllm_runs.KV_CACHE_FREE_GPU_MEM_FRACTION if gpu_memory_utilization is None else gpu_memory_utilization
    n = requests or trtllm_runs.NUM_REQUESTS[(isl, osl)]
    sm = StepModel.of(LLAMA_3_1_8B, H100_SXM, precision=precision, regime=regime)
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM, precision=precision, step_model=sm, gpu_memory_utilization=util)
    res = simulate(Workload(np.zeros(n), isl, osl), replica)
    return float(res.output_tokens.sum()) / res.span_s / trtllm_runs.LLAMA_3_1_8B_FP8_H100[(isl, osl)]
