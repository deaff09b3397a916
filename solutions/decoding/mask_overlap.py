"""When the grammar bitmask is free and when it stalls: the engine loop around one step.

vLLM v1's `EngineCore.step` launches the forward pass without blocking, computes the grammar
bitmask on the engine-core thread while the GPU works, then waits for the forward pass and
samples with the mask. The mask is hidden while it takes less than the forward pass; past that,
every step waits for it. `mask_fill_seconds` paraphrases how `StructuredOutputManager.grammar_bitmask`
fills the rows: serially up to 128 structured requests, and always when the engine is configured with
speculative tokens (`max_num_spec_tokens = self.vllm_config.num_speculative_tokens`, whether or not
a step schedules drafts); otherwise above 128 in chunks of 16 on a pool of min(CPUs / 2, 8) threads.
With speculative tokens a request fills one row per grammar-valid draft plus one; rows after a draft
the grammar rejects are copies or all-ones, nearly free. With drafts, the forward pass is a
verification step (`speculative.verify_step`), longer than a decode step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from solutions.decoding.speculative import verify_step
from solutions.step_model import StepModel

PARALLEL_THRESHOLD = 128  # StructuredOutputManager.fill_bitmask_parallel_threshold
PARALLEL_CHUNK = 16  # fill_bitmask_parallel_batch_size


def mask_threads(cpus: int) -> int:
    """Threads vLLM uses for large batches: at least 1, at most half the CPUs or 8."""
    if cpus < 1:
        raise ValueError(f"cpus must be >= 1, got {cpus}")
    return max(1, min(cpus // 2, 8))


def mask_fill_seconds(requests: int, per_mask_s: float, spec_tokens: int = 0, cpus: int = 32,
                      filled_rows: float | None = None) -> float:
    """CPU time until every structured request's mask rows are filled, assuming the threads really
    run in parallel. `spec_tokens` is the configured `num_speculative_tokens` (any value above 0 keeps
    the serial path); `filled_rows` the mean rows a request fills (default 1 + spec_tokens, every
    draft grammar-valid)."""
    if requests < 0 or per_mask_s < 0 or spec_tokens < 0:
        raise ValueError("requests, per_mask_s and spec_tokens must be >= 0")
    if filled_rows is None:
        filled_rows = 1 + spec_tokens
    if not 1 <= filled_rows <= 1 + spec_tokens:
        raise ValueError(f"filled_rows must be in [1, 1 + spec_tokens], got {filled_rows}")
    rows = requests * filled_rows
    if requests <= PARALLEL_THRESHOLD or spec_tokens:
        return rows * per_mask_s
    chunks = math.ceil(requests / PARALLEL_CHUNK)
    rounds = math.ceil(chunks / mask_threads(cpus))
    return rounds * PARALLEL_CHUNK * per_mask_s


@dataclass(frozen=True)
class LoopStep:
    """One engine-loop iteration: CPU work outside the kernels, GPU forward, mask, and the period."""

    cpu_s: float  # scheduling, input preparation, sampling launch: the step model's overhead
    forward_s: float  # GPU time of the forward pass (kernels + all-reduce)
    mask_s: float
    period_s: float  # time between consecutive steps' starts
    async_scheduling: bool = False

    @property
    def cpu_path_s(self) -> float:
        """CPU work that must fit under the forward pass to cost nothing."""
        return self.cpu_s + self.mask_s if self.async_scheduling else self.mask_s

    @property
    def stall_s(self) -> float:
        """GPU idle time per step caused by the mask (beyond what the loop costs without it)."""
        return max(0.0, self.cpu_path_s - self.forward_s) - max(0.0, self.cpu_s * self.async_scheduling
                                                                 - self.forward_s)

    @property
    def hidden(self) -> bool:
        return self.cpu_path_s <= self.forward_s


def loop_step(sm: StepModel, batch: int, context_len: float, per_mask_s: float, structured: int | None = None,
              spec_tokens: int = 0, cpus: int = 32, async_scheduling: bool = False,
              drafts: float | None = None, filled_rows: float | None = None) -> LoopStep:
    """A decode step of `batch` sequences, `structured` of them (default all) with a grammar.

    With `spec_tokens` configured, the forward pass verifies `drafts` tokens per sequence (default
    `spec_tokens`: Model Runner V2's n-gram and EAGLE drafters fill every slot) and each structured
    request fills `filled_rows` mask rows (default 1 + spec_tokens), serially.

    Synchronous loop: schedule (the step model's per-step overhead), then forward and mask side by
    side; period = overhead + max(forward, mask). Async scheduling (vLLM's batch queue, the default):
    the next step's scheduling and, for structured requests, its deferred mask run while the GPU
    executes; period = max(forward, overhead + mask), so the mask hides while it fits in
    forward - overhead."""
    step = verify_step(sm, batch, context_len, spec_tokens if drafts is None else drafts)
    forward = step.seconds - step.overhead_s
    mask = mask_fill_seconds(batch if structured is None else structured, per_mask_s, spec_tokens, cpus,
                             filled_rows)
    if async_scheduling:
        period = max(forward, step.overhead_s + mask)
    else:
        period = step.overhead_s + max(forward, mask)
    return LoopStep(step.overhead_s, forward, mask, period, async_scheduling)
