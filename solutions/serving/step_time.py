"""Step pricing for the simulator: the kit's one step model, or a fixed service time per job.

A step is priced by `solutions.step_model.StepModel` from four sums over its sequences (tokens,
sequences, cached tokens, causal pairs; see that module): `StepModel.__call__(plan)` and its
vectorised `decode_run_seconds` are what `simulate` calls. `ServiceTime` turns the replica into a
single-server queue, so the simulator can be checked against queueing closed forms.
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions.step_model import StepShape

__all__ = ["ServiceTime", "StepShape"]


@dataclass(frozen=True)
class ServiceTime:
    """Single-server mode: a step serves one job and lasts that job's own service time."""

    service_s: list  # seconds, indexed by request id

    def __call__(self, plan) -> float:
        (rid, _, _), = plan.chunks  # exactly one job per step
        return self.service_s[rid]
