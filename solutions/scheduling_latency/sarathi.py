"""Sarathi-Serve's published setting and measurements (Agrawal et al., OSDI'24, arXiv:2403.02310),
for answers that reproduce or check them.

Setting of its single-GPU capacity runs (figures 5-6), from microsoft/sarathi-serve@
02d2567eb169d947c7093f57b5b74ad602615947:osdi-experiments/figure-5-6/ (README.md,
mistral7b_strict.yml, mistral7b_relaxed.yml): Mistral-7B-Instruct-v0.2 on one A100 80GB PCIe,
2,048 requests per trial, batch size 128 for vLLM and Sarathi, a P99 TBT SLO of 0.1 s (strict,
chunk 512) or 0.5 s (relaxed, chunk 2,048).

The chat trace those runs replay is
`data/processed_traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv` of
microsoft/sarathi-serve@72339db5b120614033b317880ad3a05a5e4c9415: 30,731 ShareGPT conversations,
prompt and output lengths in Llama 2 tokens (prompt + output <= 8,192, outputs <= 1,024).
The trace itself is not vendored: each tuple below is its 100 centile midpoints (the 0.5th,
1.5th, ..., 99.5th percentiles, rounded), enough to resample lengths with the right mean and tail
(mean prompt 2,340 and output 439 tokens in the trace; prompt and output lengths are nearly
independent there, correlation 0.04, so they are drawn independently).
"""

from __future__ import annotations

from solutions.serving.distributions import Empirical

BATCH_SIZE = 128  # batch_size of the vllm and sarathi schedulers in mistral7b_*.yml
TBT_SLO_S = {"strict": 0.1, "relaxed": 0.5}  # --tbt-slo-value in figure-5-6/README.md (Mistral-7B)
CHUNK = {"strict": 512, "relaxed": 2048}  # chunk_size of sarathi_512 / sarathi_2048 in those files

# Figure 9a, measured: prefill time of one prompt cut into chunks, relative to one 16,384-token
# chunk (i.e. unchunked), Yi-34B with 2-way tensor parallelism on A100 80GB PCIe
# (osdi-experiments/figure-9/chunking-overhead.csv and README.md at the same commit).
# {prompt tokens: {chunk size: relative prefill time}}
CHUNKING_OVERHEAD_YI34B_TP2 = {
    2047: {512: 1.152, 1024: 1.175, 2048: 0.999},
    4095: {512: 1.189, 1024: 1.202, 2048: 1.024},
    8191: {512: 1.117, 1024: 1.109, 2048: 0.937},
    16383: {512: 0.995, 1024: 0.961, 2048: 0.805},
}

SHAREGPT_PROMPT_PERCENTILES = (
    9, 14, 18, 22, 26, 32, 38, 46, 55, 67, 81, 96, 114, 140, 165, 199, 232, 271, 318, 360, 406, 445,
    484, 521, 559, 602, 641, 681, 716, 752, 799, 837, 876, 911, 954, 993, 1037, 1081, 1129, 1175, 1223,
    1273, 1328, 1371, 1425, 1486, 1536, 1592, 1646, 1701, 1758, 1822, 1885, 1959, 2029, 2097, 2167,
    2228, 2293, 2361, 2436, 2523, 2598, 2677, 2756, 2844, 2927, 3005, 3100, 3187, 3284, 3379, 3472,
    3574, 3682, 3778, 3889, 3992, 4104, 4214, 4335, 4460, 4576, 4708, 4855, 4990, 5141, 5288, 5451,
    5602, 5777, 5947, 6104, 6304, 6477, 6655, 6852, 7056, 7289, 7622,
)

SHAREGPT_OUTPUT_PERCENTILES = (
    3, 12, 24, 32, 40, 47, 55, 64, 71, 79, 88, 96, 106, 116, 125, 135, 146, 156, 166, 177, 186, 195,
    204, 213, 224, 232, 242, 251, 259, 268, 276, 284, 292, 301, 308, 315, 322, 329, 336, 343, 350, 357,
    363, 370, 377, 384, 390, 397, 404, 412, 419, 426, 433, 440, 449, 457, 465, 472, 479, 488, 497, 505,
    512, 522, 530, 537, 546, 557, 566, 575, 585, 595, 604, 614, 623, 633, 643, 653, 665, 677, 689, 703,
    717, 731, 746, 762, 779, 793, 810, 825, 842, 859, 876, 893, 912, 929, 948, 965, 986, 1009,
)


def sharegpt_lengths() -> tuple[Empirical, Empirical]:
    """(prompt, output) length distributions of Sarathi-Serve's ShareGPT trace."""
    return Empirical(SHAREGPT_PROMPT_PERCENTILES), Empirical(SHAREGPT_OUTPUT_PERCENTILES)
