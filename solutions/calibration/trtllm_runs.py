"""Published TensorRT-LLM max-load throughput, copied as data so the kit never reads files at run
time. Nothing here was measured by this project.

NVIDIA/TensorRT-LLM@00f37686aa854010d68bcbd0f4ab000221541ca6:docs/source/performance/perf-overview.md,
"Throughput Measurements", table "Llama 3.1 8B", column "H100 TP1 (FP8)": `Total Output Throughput
(tokens/sec)` of `trtllm-bench throughput` (PyTorch backend) on an H100 SXM 80GB (DGX H100),
nvidia/Llama-3.1-8B-Instruct-FP8, every request queued at once with fixed input/output lengths
(ISL/OSL), `$num_requests` from the page's own table. The page says it "In many cases" raises the
KV share with `--kv_cache_free_gpu_mem_fraction 0.95`; which cases is not stated.
"""

from __future__ import annotations

SOURCE = ("NVIDIA/TensorRT-LLM@00f37686aa854010d68bcbd0f4ab000221541ca6:docs/source/performance/perf-overview.md, "
          "'Llama 3.1 8B', H100 TP1 (FP8)")
KV_CACHE_FREE_GPU_MEM_FRACTION = 0.95

# (input, output) tokens -> output tokens/s
LLAMA_3_1_8B_FP8_H100 = {
    (128, 128): 28312, (128, 2048): 22714, (128, 4096): 14325, (500, 2000): 17660, (1000, 1000): 15220,
    (1000, 2000): 13899, (2048, 128): 3450, (2048, 2048): 9305, (5000, 500): 3459, (20000, 2000): 1351,
}
# (input, output) -> requests in the run (the page's `$num_requests` table; 500/2000 and 1000/1000 listed there too)
NUM_REQUESTS = {
    (128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (500, 2000): 3000, (1000, 1000): 3000,
    (1000, 2000): 1500, (2048, 128): 3000, (2048, 2048): 1500, (5000, 500): 1500, (20000, 2000): 1000,
}
