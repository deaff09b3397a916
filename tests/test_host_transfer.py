"""Copies of paged KV: the per-copy overhead dominates small copies and vanishes for large ones."""

import pytest

from solutions.kv_cache_memory.host_transfer import COPY_CALL_OVERHEAD_S, PCIE_DMA_EFFICIENCY, copy_seconds, effective_bandwidth

LINK = 64e9


def test_large_copies_approach_the_achievable_rate_and_small_ones_the_overhead():
    assert effective_bandwidth(1 << 30, LINK) == pytest.approx(LINK * PCIE_DMA_EFFICIENCY, rel=0.01)
    assert effective_bandwidth(64, LINK) == pytest.approx(64 / COPY_CALL_OVERHEAD_S, rel=0.01)


def test_half_the_time_is_overhead_where_size_equals_overhead_times_rate():
    s = COPY_CALL_OVERHEAD_S * LINK * PCIE_DMA_EFFICIENCY
    assert effective_bandwidth(s, LINK) == pytest.approx(LINK * PCIE_DMA_EFFICIENCY / 2, rel=1e-9)


def test_splitting_a_transfer_into_more_copies_costs_exactly_their_overhead():
    whole = copy_seconds(1 << 20, 1 << 20, LINK)
    split = copy_seconds(1 << 20, 1 << 15, LINK)
    assert split - whole == pytest.approx(31 * COPY_CALL_OVERHEAD_S)


@pytest.mark.parametrize("args", [(0, 1, LINK), (1, 0, LINK), (1, 1, 0)])
def test_bad_sizes_are_clear_errors(args):
    with pytest.raises(ValueError, match="must be positive"):
        copy_seconds(*args)
