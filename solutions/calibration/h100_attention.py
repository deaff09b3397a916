"""Published H100 attention-kernel measurements, copied as data so the kit never reads files at run
time. Nothing here was measured by this project.

- Prefill (FlashAttention-3 forward): the test plan of pytorch/benchmark PR 2391, commit
  pytorch/benchmark@ff65cb675209d2308f7d27c6920af8a32de9aa90 ("Fix dimension order for
  FlashAttention-3"): `run_benchmark.py triton --op flash_attention --only ...,flash_v3 --metrics
  tflops --d-head 128`, shapes sized as the FA3 paper sizes them (batch x seqlen = 16K, 16 heads of
  128), the `flash_v3-tflops` column. No `--causal` flag, so full (non-causal) attention:
  4 x batch x heads x seqlen^2 x head_dim FLOPs. FA3 runs only on Hopper; the commit does not name
  the card (an H100 SXM is assumed, as the FA3 paper's own runs are).
- Decode (paged, one query token per sequence), two sources that disagree:
  * vllm-project/flash-attention PR 63 ("FA3 Decode Perf - Use single mma warp group for decode
    batches"), its "Main" table "FlashAttn vs FlashInfer Timing (ms)", rows `decode qwen32b-tp2`,
    page size P = 1, the FlashAttn column: vLLM's own FA3 fork, batch 1. Qwen-32B at TP 2 holds 4
    KV heads of 128 per GPU (8 KV heads / 2); its query heads (20 or 32 per GPU, by the Qwen
    generation) do not change the bytes.
  * Dao-AILab/flash-attention issue 1572 (comment of 2025-04-11, "I tested this script on an H100"):
    FA3 with CUDA graphs, batch 16, 32 query and 32 KV heads of 128, page size 8; the commenter
    reports not reaching the issue author's (closer to ideal) times, so these are a slow H100.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFILL_SOURCE = ("pytorch/benchmark@ff65cb675209d2308f7d27c6920af8a32de9aa90 (PR 2391 test plan, "
                  "flash_v3-tflops, d-head 128, non-causal)")
DECODE_VLLM_FA_SOURCE = "vllm-project/flash-attention#63, 'Main' table, decode qwen32b-tp2, P=1, FlashAttn (ms)"
DECODE_FA_ISSUE_SOURCE = "Dao-AILab/flash-attention#1572, comment of 2025-04-11 (H100, FA3 w CUDA Graph)"


@dataclass(frozen=True)
class PrefillRow:
    """Full attention over `seqlen` tokens, `batch` sequences, `heads` heads of `head_dim`."""

    batch: int
    heads: int
    seqlen: int
    head_dim: int
    tflops: float
    source: str = PREFILL_SOURCE

    @property
    def flops(self) -> float:
        return 4.0 * self.batch * self.heads * self.seqlen ** 2 * self.head_dim

    @property
    def seconds(self) -> float:
        return self.flops / (self.tflops * 1e12)


@dataclass(frozen=True)
class DecodeRow:
    """One decode-attention kernel: `batch` sequences of `context` cached tokens, `kv_heads` KV
    heads (and `q_heads` query heads) of `head_dim`, 16-bit KV."""

    batch: int
    q_heads: int
    kv_heads: int
    head_dim: int
    context: int
    seconds: float
    source: str

    @property
    def kv_bytes(self) -> float:
        return 2.0 * self.batch * self.context * self.kv_heads * self.head_dim * 2


PREFILL = tuple(PrefillRow(b, 16, s, 128, t) for b, s, t in (
    (32, 512, 430.32), (16, 1024, 517.099), (8, 2048, 565.544),
    (4, 4096, 590.233), (2, 8192, 614.234), (1, 16384, 620.73)))

DECODE_VLLM_FA = tuple(DecodeRow(1, 20, 4, 128, s, ms * 1e-3, DECODE_VLLM_FA_SOURCE) for s, ms in (
    (1024, 0.0148), (2048, 0.0156), (4096, 0.0165), (8192, 0.0191), (16384, 0.0263)))

DECODE_FA_ISSUE = tuple(DecodeRow(16, 32, 32, 128, s, us * 1e-6, DECODE_FA_ISSUE_SOURCE) for s, us in (
    (128, 27.6), (2000, 292.0), (4000, 567.2)))
