"""q02 and q53 price the same setup (Llama 3.1 8B in BF16 on one H100 SXM, vLLM 0.33.0's memory
defaults, 2,048-token contexts): one function (`solutions.capacity.kv_pool_bytes`) computes the pool
for both, and their committed claim tables must state the same pool and the same KV ceiling."""

import json
import re
from pathlib import Path

import pytest

from solutions.capacity import VLLM_GPU_MEMORY_UTILIZATION, kv_pool_bytes, sequences_that_fit, total_memory_bytes
from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_8B
from solutions.units import GiB

ROOT = Path(__file__).resolve().parents[1]
Q02 = ROOT / "notebooks/roofline-capacity/q02-throughput-hyperbola.ipynb"
Q53 = ROOT / "notebooks/roofline-capacity/q53-max-num-seqs.ipynb"


def claimed(path: Path) -> dict[str, float]:
    """The 'computed' column of a notebook's committed claims table, by claim name."""
    rows = {}
    for cell in json.loads(path.read_text())["cells"]:
        for output in cell.get("outputs", []):
            text = "".join(output.get("data", {}).get("text/markdown", ""))
            for m in re.finditer(r"^\| (.+?) \| ([-0-9.e+]+) \|", text, re.M):
                rows[m[1]] = float(m[2])
    if not rows:
        raise AssertionError(f"{path.name}: no claims table in the committed outputs")
    return rows


def test_q02_and_q53_state_the_same_pool_and_kv_ceiling():
    q02, q53 = claimed(Q02), claimed(Q53)
    pool = kv_pool_bytes(LLAMA_3_1_8B, total_memory_bytes(H100_SXM), VLLM_GPU_MEMORY_UTILIZATION, 2 * GiB)
    assert q02["KV pool on H100 80GB at 0.92"] == pytest.approx(pool / GiB, abs=0.01)
    assert q53["KV pool at gpu_memory_utilization 0.92"] == pytest.approx(pool / GiB, abs=0.01)
    fits = sequences_that_fit(pool, LLAMA_3_1_8B, 2048)
    assert q02["KV ceiling B_max at 2,048 tokens"] == fits == q53["team A: KV ceiling"]
    assert q02["critical batch B* (fitted efficiencies)"] == q53["critical batch of the GEMMs (fitted efficiencies)"]
