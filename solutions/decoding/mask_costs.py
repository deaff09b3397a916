"""Published per-mask costs (what filling one grammar bitmask row takes on one CPU core) and compile times.

The bank's own mask costs are modelled (q17's automaton: work counted, then converted at the
assumed prices `json_grammar.BYTE_STEP_S` and `COPY_BYTES_PER_S`). These are the measurements to hold
them against. Every answer that prices a mask (q17, q18, q27) quotes both and sweeps between them,
so the conclusions are stated for the modelled and for the measured regime.

All figures are single-threaded, on JSON-schema workloads, with a Llama 3 tokenizer (~128K ids; MaskBench
counts its tokens with it):
- llguidance, llama.cpp's documentation: 50 us mean, 0.5 ms p99, 20 ms p100 on JSONSchemaBench
  (ggerganov/llama.cpp@adc4aed0af9553b5db44d2ed149e1d0ec941eb94:docs/llguidance.md, "Performance").
- MaskBench, JSONSchemaBench's mask-only benchmark (~10k schemas, ~2M tokens, AMD EPYC 7V13, one
  thread per engine; guidance-ai/jsonschemabench@aa8d24f182236a038a5862a9ef8d340f63cfa9a4:maskbench/README.md):
  llguidance 0.6.7 mean 47 us, p50 36, p99 460; XGrammar 0.1.10 (default settings) mean 292 us, p50 8,
  p99 4,936: faster than llguidance up to p75, a slow tail above.
- XGrammar's own benchmark (NousResearch/json-mode-eval, Llama-3.1-8B-Instruct's tokenizer, AMD Ryzen
  9 7950X): 35.7 us per token (mlc-ai/xgrammar@51edd815efe5bc744f56b82a0395fb72577d022a:benchmark/README.md).
  Its timer covers `fill_next_token_bitmask`, `apply_token_bitmask_inplace` on the GPU and
  `accept_token` per token (mlc-ai/xgrammar@2d3132103717eefddd127ce94d8072b355373ea2:
  examples/benchmark/bench_grammar_compile_mask_gen.py, `xgrammar_exec`), so the fill alone is at most that.
  The same table gives lm-format-enforcer 0.10.6 6,147.1414 us per token (6 of 99 schemas failed); its timer
  (`lmformatenforcer_exec`) covers `TokenEnforcer.get_allowed_tokens`, the call vLLM's backend makes every step,
  plus one GPU logits write: the measured naive end, a per-step walk, not a precompiled mask.
Compile times from the same two tables are at the end of this module.
The XGrammar paper (arXiv 2411.15100) reports per-token times too; its tables were not read here.
vLLM 0.33.0's default backend ("auto") is xgrammar, with guidance as the fallback.
"""

from __future__ import annotations

from dataclasses import dataclass

LLAMA_CPP = "ggerganov/llama.cpp@adc4aed0af9553b5db44d2ed149e1d0ec941eb94:docs/llguidance.md"
MASKBENCH = "guidance-ai/jsonschemabench@aa8d24f182236a038a5862a9ef8d340f63cfa9a4:maskbench/README.md"
XGRAMMAR_BENCH = "mlc-ai/xgrammar@51edd815efe5bc744f56b82a0395fb72577d022a:benchmark/README.md"


@dataclass(frozen=True)
class MaskCost:
    """One published time: per mask (per token), or per schema compiled."""

    engine: str
    statistic: str  # "mean", "p50", "p99" over the benchmark's tokens
    seconds: float
    workload: str
    source: str

    @property
    def label(self) -> str:
        return f"{self.engine} {self.statistic}"


LLGUIDANCE_MEAN = MaskCost("llguidance", "mean", 50e-6, "JSONSchemaBench", LLAMA_CPP)
LLGUIDANCE_P99 = MaskCost("llguidance", "p99", 0.5e-3, "JSONSchemaBench", LLAMA_CPP)
LLGUIDANCE_MASKBENCH_MEAN = MaskCost("llguidance 0.6.7", "mean", 47e-6, "MaskBench", MASKBENCH)
XGRAMMAR_MASKBENCH_P50 = MaskCost("XGrammar 0.1.10", "p50", 8e-6, "MaskBench", MASKBENCH)
XGRAMMAR_MASKBENCH_MEAN = MaskCost("XGrammar 0.1.10", "mean", 292e-6, "MaskBench", MASKBENCH)
XGRAMMAR_MASKBENCH_P99 = MaskCost("XGrammar 0.1.10", "p99", 4936e-6, "MaskBench", MASKBENCH)
XGRAMMAR_OWN_MEAN = MaskCost("XGrammar", "mean", 35.7277e-6, "json-mode-eval, fill + apply + accept",
                             XGRAMMAR_BENCH)
LMFE_OWN_MEAN = MaskCost("lm-format-enforcer 0.10.6", "mean", 6147.1414e-6,
                         "json-mode-eval, get_allowed_tokens + logits write", XGRAMMAR_BENCH)

# the figures a sweep runs through, cheapest first (the modelled cost goes in front of them)
SWEEP = (XGRAMMAR_MASKBENCH_P50, XGRAMMAR_OWN_MEAN, LLGUIDANCE_MEAN, XGRAMMAR_MASKBENCH_MEAN)

# Compiling a schema (MaskBench's "time to first mask", TTFM; XGrammar's "grammar preprocessing time"),
# the same sources and settings. MaskBench's discussion: XGrammar's TTFM is "consistently 3-4 orders of
# magnitude slower than LLGuidance and llama.cpp".
LLGUIDANCE_COMPILE_P50 = MaskCost("llguidance 0.6.7", "compile p50", 987e-6, "MaskBench", MASKBENCH)
XGRAMMAR_COMPILE_P50 = MaskCost("XGrammar 0.1.10", "compile p50", 535.498e-3, "MaskBench", MASKBENCH)
XGRAMMAR_COMPILE_MEAN = MaskCost("XGrammar 0.1.10", "compile mean", 4.137527, "MaskBench", MASKBENCH)
XGRAMMAR_COMPILE_OWN = MaskCost("XGrammar", "compile mean", 61.9149e-3, "json-mode-eval", XGRAMMAR_BENCH)
