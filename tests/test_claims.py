import pytest

from solutions.claims import ClaimDrift, Claims


def test_claims_pass_within_tolerance_and_render_a_table(capsys):
    claim = Claims()
    claim("MBU", 0.6213, expect=0.62, rel=0.01)
    claim("error points", 29.6, expect=30, abs=1, unit="pp")
    claim.check()
    table = claim.table()
    assert "| MBU | 0.6213 | 0.62 |" in table._repr_markdown_()
    assert "DRIFTED" not in repr(table)


def test_a_drifted_claim_fails_and_names_both_numbers():
    claim = Claims()
    claim("ok", 1.0, expect=1.0, rel=0.01)
    claim("bandwidth", 2.4, expect=3.35, rel=0.01)
    with pytest.raises(ClaimDrift, match=r"bandwidth: computed 2.4, prose states 3.35"):
        claim.check()


def test_claims_need_a_tolerance_a_unique_name_and_a_finite_value():
    claim = Claims()
    with pytest.raises(ValueError, match="tolerance"):
        claim("x", 1, expect=1)
    claim("x", 1, expect=1, rel=0.1)
    with pytest.raises(ValueError, match="twice"):
        claim("x", 1, expect=1, rel=0.1)
    with pytest.raises(ClaimDrift, match="nan"):
        claim("y", float("nan"), expect=1, rel=0.1)
    with pytest.raises(ClaimDrift, match="no claims"):
        Claims().check()
