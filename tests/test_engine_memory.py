"""The start-up ledger (vLLM 0.33.0): its arithmetic, its check's two branches, and the premises of
the two prompts that price it (q22 and q37, the same 70B-on-two-H100s box)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from solutions.kv_cache_memory.engine_memory import (DEFAULT_GPU_MEMORY_UTILIZATION, TERMS, StartupLedger, activation_calibration,
                                     activation_peak_bytes)
from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_8B, LLAMA_3_3_70B, MAX_POSITION_EMBEDDINGS
from solutions.units import GiB

ROOT = Path(__file__).resolve().parents[1]
BOX = dict(model=LLAMA_3_3_70B, gpu=H100_SXM, tp=2)


@pytest.mark.parametrize("tp, logged_weights_gib", [(1, 14.96), (2, 7.48)])
def test_weights_per_rank_match_vllms_profile_log(tp, logged_weights_gib):
    # vllm-project/vllm#10511's logs for Meta-Llama-3-8B on H100: "model weights take 14.96GiB" / "7.48GiB"
    ledger = StartupLedger.of(LLAMA_3_1_8B, H100_SXM, tp=tp)
    assert ledger.weights / GiB == pytest.approx(logged_weights_gib, abs=0.01)


def test_the_ledger_adds_up_to_the_card():
    for ledger in StartupLedger.corners(**BOX).values():
        assert ledger.utilization == DEFAULT_GPU_MEMORY_UTILIZATION == 0.92
        parts = ledger.weights + ledger.activation_peak + ledger.after_snapshot + ledger.cuda_graphs
        assert parts + ledger.available_kv + ledger.headroom == pytest.approx(ledger.total)


def test_corners_are_ordered_and_the_high_one_scales_the_activation_estimate():
    c = StartupLedger.corners(**BOX)
    assert c["high"].available_kv < c["central"].available_kv < c["low"].available_kv
    assert c["high"].activation_peak == pytest.approx(activation_calibration() * c["low"].activation_peak)
    assert activation_calibration() > 1  # the shape estimate undershot the measured 8B profile


def test_both_prompts_premises_hold_on_the_one_ledger():
    """q22: no --max-model-len fails, 16K passes, 0.85 gives the other message. q37: 32K fails.
    Both pages price this box with StartupLedger.of, so they agree by construction; this holds
    the ledger to what both prompts state."""
    context = MAX_POSITION_EMBEDDINGS[LLAMA_3_3_70B.name]
    corners = StartupLedger.corners(**BOX)
    for name, ledger in corners.items():
        assert ledger.check(context).startswith("To serve at least one request"), name
        assert ledger.check(32768) is not None, name
    for name in ("low", "central"):
        assert corners[name].check(16384) is None, name
    for ledger in StartupLedger.corners(**BOX, utilization=0.85).values():
        assert ledger.check(context).startswith("No available memory for the cache blocks")


@pytest.mark.parametrize("notebook", ["q22-three-flags-startup-check", "q37-engine-refuses-to-start"])
def test_both_pages_build_the_box_from_the_shared_ledger(notebook):
    nb = json.loads((ROOT / "notebooks/kv-cache-memory" / f"{notebook}.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "StartupLedger.corners(model, gpu, tp=TP)" in code
    assert "StartupLedger(" not in code.replace("StartupLedger.", "")  # no hand-built ledger


def test_check_passes_when_one_request_fits_and_names_the_length_that_fits_otherwise():
    ledger = StartupLedger.of(LLAMA_3_3_70B, H100_SXM, tp=2, weight_dtype="fp8")
    assert ledger.check(8192) is None
    longest = ledger.max_model_len_that_fits()
    assert longest % ledger.block_size == 0
    assert ledger.check(longest) is None
    message = ledger.check(longest + 1)
    assert "To serve at least one request" in message and f"estimated maximum model length is {longest}" in message


def test_the_null_block_is_left_out_of_the_check_and_the_estimate():
    # vLLM 0.33.0's get_kv_cache_configs checks and estimates against available memory less one block
    # (the null block BlockPool holds back): a pool of exactly one request's blocks refuses it.
    ledger = StartupLedger.of(**BOX)
    assert ledger.usable_kv == ledger.available_kv - ledger.block_size * ledger.kv_bytes_per_token
    longest = ledger.max_model_len_that_fits()
    assert longest == (int(ledger.available_kv // ledger.block_bytes) - 1) * ledger.block_size
    exact = replace(ledger, after_snapshot=ledger.after_snapshot + ledger.available_kv - ledger.kv_needed(longest) - 1)
    assert exact.available_kv == pytest.approx(ledger.kv_needed(longest) + 1)
    assert exact.check(longest) is not None
    assert exact.check(longest - ledger.block_size) is None


def test_init_check_refuses_when_the_card_is_not_free_enough_for_the_budget():
    ledger = StartupLedger.of(**BOX, utilization=0.99)
    assert ledger.init_check(0.5 * ledger.headroom) is None
    assert "is less than desired GPU memory utilization (0.99" in ledger.init_check(2 * ledger.headroom)


def test_peak_is_the_larger_phase_and_grows_with_the_step_budget():
    small = activation_peak_bytes(LLAMA_3_3_70B, 2, max_num_batched_tokens=2048, max_num_seqs=16)
    large = activation_peak_bytes(LLAMA_3_3_70B, 2, max_num_batched_tokens=8192, max_num_seqs=16)
    assert large == pytest.approx(4 * small, rel=0.01)


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_bad_inputs_are_clear_errors(bad):
    with pytest.raises(ValueError, match="must be"):
        activation_peak_bytes(LLAMA_3_1_8B, tp=bad)
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        StartupLedger.of(LLAMA_3_1_8B, H100_SXM, utilization=1.5)
    with pytest.raises(ValueError, match="terms must be one of"):
        StartupLedger.of(LLAMA_3_1_8B, H100_SXM, terms="median")
    with pytest.raises(ValueError, match="max_model_len must be"):
        StartupLedger.of(LLAMA_3_1_8B, H100_SXM).check(bad)
    assert set(TERMS) == {"low", "central", "high"}


def test_fp8_keeps_the_embedding_and_lm_head_in_bf16_as_vllm_does():
    # vLLM 0.33.0's fp8.py quantizes LinearBase layers only: 2 x vocab x hidden stay at 2 bytes.
    m = LLAMA_3_3_70B
    extra = m.weight_bytes("fp8") - m.params  # over every parameter at one byte
    assert extra == 2 * m.vocab_size * m.hidden_size
    assert m.weight_bytes("bf16") == 2 * m.params
    fp8 = StartupLedger.of(m, H100_SXM, tp=2, weight_dtype="fp8")
    assert fp8.weights == pytest.approx(m.weight_bytes("fp8") / 2)
    assert fp8.available_kv / GiB == pytest.approx(36.0, abs=0.1)
