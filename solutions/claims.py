"""Claims: the headline numbers a notebook's prose states, asserted against the code.

    claim = Claims()
    claim("MBU at batch 64", mbu_value, expect=0.62, rel=0.02)
    ...
    claim.check()   # last cell: shows the table, fails the run if any number drifted

A drifted number fails the notebook (and so nbval, and so CI) with the claim's name, the
value the code now computes and the one the prose promises.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class ClaimDrift(AssertionError):
    """A number the prose states no longer matches what the code computes."""


@dataclass(frozen=True)
class Claim:
    name: str
    value: float
    expect: float
    rel: float | None
    abs: float | None
    unit: str

    @property
    def ok(self) -> bool:
        return math.isclose(self.value, self.expect, rel_tol=self.rel or 0.0, abs_tol=self.abs or 0.0)

    @property
    def tolerance(self) -> str:
        parts = []
        if self.rel:
            parts.append(f"±{self.rel:.3g} rel")
        if self.abs:
            parts.append(f"±{self.abs:.3g} abs")
        return " or ".join(parts) or "exact"


def _fmt(x: float) -> str:
    return f"{x:.4g}"


class ClaimTable:
    """The rendered summary: Markdown in a notebook, plain text anywhere else."""

    def __init__(self, claims: list[Claim]):
        self.claims = claims

    def _rows(self):
        for c in self.claims:
            yield (c.name, _fmt(c.value), _fmt(c.expect), c.tolerance, c.unit, "ok" if c.ok else "DRIFTED")

    def _repr_markdown_(self) -> str:
        head = "| claim | computed | stated | tolerance | unit | status |\n|---|---:|---:|---|---|---|\n"
        return head + "\n".join("| " + " | ".join(r) + " |" for r in self._rows())

    def __repr__(self) -> str:
        rows = list(self._rows())
        width = max([len(r[0]) for r in rows] + [5])
        lines = [f"{'claim':<{width}}  {'computed':>10}  {'stated':>10}  status"]
        lines += [f"{r[0]:<{width}}  {r[1]:>10}  {r[2]:>10}  {r[5]} {r[4]}".rstrip() for r in rows]
        return "\n".join(lines)


class Claims:
    """Collects claims; `check()` renders them and raises `ClaimDrift` if any drifted."""

    def __init__(self):
        self._claims: dict[str, Claim] = {}

    def __call__(self, name: str, value: float, expect: float, *, rel: float | None = None,
                 abs: float | None = None, unit: str = "") -> float:
        if rel is None and abs is None:
            raise ValueError(f"claim {name!r}: give a tolerance (rel= or abs=)")
        if name in self._claims:
            raise ValueError(f"claim {name!r} stated twice")
        if not math.isfinite(float(value)):
            raise ClaimDrift(f"claim {name!r}: computed value is {value}")
        self._claims[name] = Claim(name, float(value), float(expect), rel, abs, unit)
        return value

    def __len__(self) -> int:
        return len(self._claims)

    def table(self) -> ClaimTable:
        return ClaimTable(list(self._claims.values()))

    def check(self) -> None:
        """Show the table; raise if any claim drifted. Call it in a notebook's last cell."""
        if not self._claims:
            raise ClaimDrift("no claims were stated")
        table = self.table()
        try:
            from IPython.display import display
        except ImportError:  # plain Python
            print(repr(table))
        else:
            display(table)
        drifted = [c for c in table.claims if not c.ok]
        if drifted:
            raise ClaimDrift("; ".join(
                f"{c.name}: computed {_fmt(c.value)}, prose states {_fmt(c.expect)} ({c.tolerance})"
                for c in drifted))
