"""Drive endurance: TBW from the rating, and wear time from a write rate."""

import pytest

from solutions.storage import MICRON_7450_PRO_7_68TB as SSD


def test_tbw_is_dwpd_times_capacity_times_warranty_days():
    assert SSD.tbw_bytes == pytest.approx(1.0 * 7.68e12 * 365 * 5)


def test_writing_one_drive_per_day_lasts_the_warranty():
    one_dwpd = SSD.capacity_tb * 1e12 / 86400
    assert SSD.days_to_wear_out(one_dwpd) == pytest.approx(365 * SSD.warranty_years)
    assert SSD.days_to_wear_out(one_dwpd, write_amplification=4) == pytest.approx(365 * SSD.warranty_years / 4)


@pytest.mark.parametrize("rate, waf", [(0, 1), (-1, 1), (1e9, 0.5)])
def test_bad_inputs_are_clear_errors(rate, waf):
    with pytest.raises(ValueError, match="write"):
        SSD.days_to_wear_out(rate, waf)
