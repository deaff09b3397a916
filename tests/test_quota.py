import numpy as np
import pytest

from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_8B
from solutions.tenancy_fleet.quota import price, token_bucket
from solutions.step_model import StepModel

SM = StepModel.of(LLAMA_3_1_8B, H100_SXM)


def test_bucket_passes_traffic_within_budget_untouched():
    t = np.arange(10.0)
    assert np.array_equal(token_bucket(t, np.ones(10), rate=2.0, burst=5.0), t)


def test_bucket_spaces_a_burst_at_the_refill_rate():
    admit = token_bucket(np.zeros(6), np.full(6, 3.0), rate=1.0, burst=6.0)
    # two pass on the full bucket, then one every 3 seconds
    assert np.allclose(admit, [0, 0, 3, 6, 9, 12])
    # long-run admitted cost never exceeds burst + rate x time
    assert np.all(np.cumsum(np.full(6, 3.0)) <= 6.0 + admit * 1.0 + 1e-9)


def test_bucket_rejects_impossible_costs():
    with pytest.raises(ValueError):
        token_bucket([0.0], [10.0], rate=1.0, burst=5.0)
    with pytest.raises(ValueError):
        token_bucket([1.0, 0.0], [1.0, 1.0], rate=1.0, burst=5.0)


def test_price_grows_faster_than_linearly_in_the_prompt():
    short, long = price(SM, 1024, 100), price(SM, 65536, 100)
    assert long.prefill_s > 64 * short.prefill_s * 1.2  # attention over the growing cache
    assert long.kv_token_s > 64 * short.kv_token_s
    assert price(SM, 1024, 200).decode_s == pytest.approx(2 * price(SM, 1024, 100).decode_s, rel=0.05)


def test_price_rejects_bad_sizes():
    with pytest.raises(ValueError):
        price(SM, 0, 10)
