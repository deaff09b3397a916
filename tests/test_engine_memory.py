"""The startup ledger against vLLM's own profile logs and its check's two branches."""

import pytest

from solutions.kv_cache_memory.engine_memory import StartupLedger, activation_peak_bytes, non_torch_bytes
from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_8B, LLAMA_3_3_70B
from solutions.units import GiB


@pytest.mark.parametrize("tp, logged_weights_gib", [(1, 14.96), (2, 7.48)])
def test_weights_per_rank_match_vllms_profile_log(tp, logged_weights_gib):
    # vLLM PR 10511's logs for Meta-Llama-3-8B on H100: "model weights take 14.96GiB" / "7.48GiB"
    ledger = StartupLedger.of(LLAMA_3_1_8B, H100_SXM, tp=tp)
    assert ledger.weights / GiB == pytest.approx(logged_weights_gib, abs=0.01)


def test_check_passes_when_one_request_fits_and_names_the_length_that_fits_otherwise():
    ledger = StartupLedger.of(LLAMA_3_3_70B, H100_SXM, tp=2, weight_dtype="fp8")
    assert ledger.check(8192) is None
    longest = ledger.max_model_len_that_fits()
    assert longest % ledger.block_size == 0
    assert ledger.check(longest) is None
    message = ledger.check(longest + 1)
    assert "To serve at least one request" in message and f"estimated maximum model length is {longest}" in message


def test_negative_remainder_gives_the_no_memory_message():
    ledger = StartupLedger.of(LLAMA_3_3_70B, H100_SXM, tp=2, utilization=0.85)
    assert ledger.available_kv < 0
    assert ledger.check(1).startswith("No available memory for the cache blocks")
    assert ledger.max_model_len_that_fits() == 0


def test_peak_is_the_larger_phase_and_grows_with_the_step_budget():
    small = activation_peak_bytes(LLAMA_3_3_70B, 2, max_num_batched_tokens=2048, max_num_seqs=16)
    large = activation_peak_bytes(LLAMA_3_3_70B, 2, max_num_batched_tokens=8192, max_num_seqs=16)
    assert large == pytest.approx(4 * small, rel=0.01)


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_bad_inputs_are_clear_errors(bad):
    with pytest.raises(ValueError, match="must be"):
        activation_peak_bytes(LLAMA_3_1_8B, tp=bad)
    with pytest.raises(ValueError, match="no measured non-torch"):
        non_torch_bytes(8)
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        StartupLedger.of(LLAMA_3_1_8B, H100_SXM, utilization=1.5)
