"""Published end-to-end vLLM serving runs, copied as data so the kit never reads files at run time.

Nothing here was measured by this project. Every run is one `vllm bench serve` result block from
GPUStack's performance lab (gpustack/gpustack, docs/performance-lab/, files and commits below):
vLLM v0.11.0 started with defaults only (`vllm serve Qwen/Qwen3-8B`, BF16, one H100 SXM, so
chunked prefill and prefix caching on, max_num_batched_tokens 8192 and max_num_seqs 1024: the
">= 70 GiB and not a100" branch, which vLLM 0.33.0 still has, `vllm==0.33.0:vllm/engine/arg_utils.py`
`# For GPUs like H100 and H200, use larger offline defaults.`; v0.11.0's own source was not read), driven by
`vllm bench serve --backend openai-chat --endpoint /v1/chat/completions` with the dataset below.

Two kinds of run:
- closed loop: `--max-concurrency C` over ShareGPT (100 prompts): C requests in flight, the next
  sent when one finishes. Only the token totals are published, not each request's length.
- open loop at request rate inf: every prompt sent at once (`--num-prompts N`), random dataset
  with fixed lengths (`--random-input-len/--random-output-len`, seed 42) or ShareGPT.
"""

from __future__ import annotations

from dataclasses import dataclass

GPUSTACK = "gpustack/gpustack"
QWEN3_8B_LATENCY = f"{GPUSTACK}@1dbc3b8130da92d31539404545a1aff5c3992f8c:docs/performance-lab/qwen3-8b/h100-latency.md"
QWEN3_14B_THROUGHPUT = f"{GPUSTACK}@7ae332aaf05783e657560ef927c527b156e2536d:docs/performance-lab/qwen3-14b/h100.md"
QWEN3_14B_A100 = f"{GPUSTACK}@10e9444a07c73556f2ef0d10d2b2766bbf54c9c0:docs/performance-lab/qwen3-14b/a100.md"
QWEN3_32B_THROUGHPUT = f"{GPUSTACK}@10e9444a07c73556f2ef0d10d2b2766bbf54c9c0:docs/performance-lab/qwen3-32b/h100.md"
ENGINE = "vLLM v0.11.0, `vllm serve <model>` (defaults), BF16, 1x H100 SXM"


@dataclass(frozen=True)
class ServingRun:
    """One published `vllm bench serve` result and the configuration it ran under."""

    name: str
    model: str  # the kit's solutions.models constant
    gpu: str  # the kit's solutions.hardware GPU name
    tp: int
    dataset: str  # "sharegpt" or "random"
    num_prompts: int
    max_concurrency: int | None  # None: request rate inf, every prompt sent at t = 0
    input_tokens: int  # totals over the run, as the benchmark prints them
    output_tokens: int
    duration_s: float
    output_tok_s: float
    median_ttft_ms: float
    median_tpot_ms: float
    source: str
    section: str  # where in the source file the block is

    @property
    def mean_input(self) -> float:
        return self.input_tokens / self.num_prompts

    @property
    def mean_output(self) -> float:
        return self.output_tokens / self.num_prompts


def _qwen3_8b(c, duration, out_tok_s, ttft, tpot):
    return ServingRun(f"Qwen3-8B ShareGPT, concurrency {c}", "QWEN3_8B", "H100 SXM", 1, "sharegpt", 100, c,
                      23260, 22061, duration, out_tok_s, ttft, tpot, QWEN3_8B_LATENCY,
                      f"'Other Benchmark Cases', baseline (vLLM) results, '# BS={c}'")


def _burst(model, name, dataset, n, tokens_in, tokens_out, duration, out_tok_s, ttft, tpot, section, source,
           gpu="H100 SXM"):
    """An open-loop run (every prompt at once) of the kit's model constant `model` ("QWEN3_14B")."""
    label = model.title().replace("_", "-")  # QWEN3_14B -> Qwen3-14B
    prefix = label if gpu == "H100 SXM" else f"{gpu.split()[0]}: {label}"
    return ServingRun(f"{prefix} {name}", model, gpu, 1, dataset, n, None, tokens_in, tokens_out,
                      duration, out_tok_s, ttft, tpot, source, section)


def _qwen3_14b(*row, gpu="H100 SXM", source=QWEN3_14B_THROUGHPUT):
    return _burst("QWEN3_14B", *row, source, gpu)


RUNS = (
    _qwen3_8b(1, 166.04, 132.86, 60.38, 7.22),
    _qwen3_8b(2, 85.78, 257.19, 64.78, 7.30),
    _qwen3_8b(4, 44.40, 496.88, 60.26, 7.40),
    _qwen3_8b(8, 24.05, 917.28, 60.77, 7.67),
    _qwen3_14b("ShareGPT, 1000 at once", "sharegpt", 1000, 217393, 201648, 63.53, 3173.92, 21872.31, 117.46,
               "'1. Choosing the Inference Engine', vLLM benchmark result"),
    _qwen3_14b("random 2000 in / 100 out, 500 at once", "random", 500, 998175, 50000, 98.91, 505.51, 49138.28,
               231.62, "'Other Benchmark Cases', baseline results, '# random 2K input'"),
    _qwen3_14b("random 4000 in / 200 out, 500 at once", "random", 500, 1997942, 99803, 227.57, 438.56, 110734.54,
               139.68, "'Other Benchmark Cases', baseline results, '# random 4K input'"),
    _qwen3_14b("random 32000 in / 100 out, 100 at once", "random", 100, 3200000, 9855, 386.80, 25.48, 191051.49,
               284.52, "'Other Benchmark Cases', baseline results, '# random 32K input'"),
    _qwen3_14b("random 128 in / 4 out, 1000 at once", "random", 1000, 127698, 4000, 22.72, 176.06, 18061.13,
               597.29, "'Other Benchmark Cases', baseline results, '# random 128 input'"),
    # The same ShareGPT burst on the GPU the kernels were fitted on. The page says "NVIDIA A100
    # GPUs"; an 80GB SXM card is assumed (vLLM's A100 defaults: 2,048 batched tokens, 256 sequences).
    _qwen3_14b("ShareGPT, 1000 at once", "sharegpt", 1000, 217393, 201605, 106.82, 1887.31, 39151.17, 106.15,
               "'1. Choosing the Inference Engine', vLLM benchmark result", gpu="A100 80GB SXM", source=QWEN3_14B_A100),
)

def _qwen3_32b(*row):
    return _burst("QWEN3_32B", *row, QWEN3_32B_THROUGHPUT)


# Another model size, held out from every fit (docs/fidelity.ipynb section 4): the same lab, engine
# release and benchmark commands as the Qwen3-14B page. Kept out of RUNS so that the aggregates
# over RUNS (fidelity.measured_vllm_gap, which other answers read) stay the 8B/14B ones.
# Hardware: the page's setup says only "NVIDIA H100 GPUs" (no count, no SXM or PCIe); the vLLM
# baseline is `vllm serve Qwen/Qwen3-32B` with no parallelism flag, so vLLM's default TP 1 on one
# GPU (the lab writes `-tp 8` where it uses eight, docs/performance-lab/qwen3-235b-a22b/h100.md);
# its 32K run agrees: peak output 24 tok/s and a flat 43 ms ITL, one 32K request in the pool at a
# time, as a one-GPU pool of ~40K tokens allows. The card is taken to be the 14B page's H100 SXM,
# an assumption: section 4 shows the batch-1 decode of that run reads as a slower card.
QWEN3_32B_RUNS = (
    _qwen3_32b("ShareGPT, 1000 at once", "sharegpt", 1000, 217393, 201422, 178.01, 1131.55, 77291.46, 70.72,
               "'1. Choosing the Inference Engine', vLLM benchmark result"),
    _qwen3_32b("random 2000 in / 100 out, 500 at once", "random", 500, 998175, 50000, 328.04, 152.42, 164148.38,
               84.24, "'Other Benchmark Cases', baseline results, '# random 2K input'"),
    _qwen3_32b("random 4000 in / 200 out, 500 at once", "random", 500, 1997942, 99790, 976.29, 102.21, 483375.28,
               62.08, "'Other Benchmark Cases', baseline results, '# random 4K input'"),
    _qwen3_32b("random 32000 in / 100 out, 100 at once", "random", 100, 3200000, 7681, 1157.25, 6.64, 582757.65,
               43.36, "'Other Benchmark Cases', baseline results, '# random 32K input'"),
    _qwen3_32b("random 128 in / 4 out, 1000 at once", "random", 1000, 127698, 4000, 32.88, 121.66, 21342.36,
               1292.78, "'Other Benchmark Cases', baseline results, '# random 128 input'"),
)
RUNS_BY_NAME = {r.name: r for r in RUNS + QWEN3_32B_RUNS}

# Async scheduling in the release the runs above were made with: v0.11.0 leaves it off unless asked
# (`--async-scheduling`; vLLM 0.33.0 turns it on by default, `vllm==0.33.0:vllm/config/vllm.py`
# `# Enable async scheduling unless there is an incompatible option.`). The same lab, release and
# benchmark commands measured what turning it on buys: gpt-oss-20b (an MoE, not a kit model) on one
# A100, the same five saturated cases; total token throughput (tok/s) without and with the flag, from
# the page's "Comparison of benchmark results before and after optimization" table (its "Optimized"
# column is `vllm serve openai/gpt-oss-20b --async-scheduling`).
GPT_OSS_20B_A100 = f"{GPUSTACK}@7b50d5067ddbdeba0739e7f72d6f40e53d3b9a04:docs/performance-lab/gpt-oss-20b/a100.md"
ASYNC_SCHEDULING_TOTAL_TOK_S = {
    "ShareGPT, 1000 at once": (9743.28, 10919.92),
    "random 128 in / 4 out, 1000 at once": (24223.22, 25172.82),
    "random 2000 in / 100 out, 500 at once": (18021.34, 18920.16),
    "random 4000 in / 200 out, 500 at once": (15938.87, 16550.81),
    "random 32000 in / 100 out, 100 at once": (7280.33, 7363.09),
}

# The one run STEP_OVERHEAD_S and SERVING_STACK_S are fitted on (solutions/step_defaults.py); every
# other run is a test.
FIT_RUN = "Qwen3-8B ShareGPT, concurrency 1"
