"""Verdicts as text for people and as Exercism-style results.json (v3) for machines."""

from __future__ import annotations

import json
import textwrap

from graders import __version__
from graders.runner import Verdict


def text(v: Verdict) -> str:
    """Stable text: no timings, no absolute paths beyond what the user typed."""
    if v.load_error:
        return f"{v.exercise}: CANNOT GRADE {v.filename}\n  {v.load_error}\n"
    passed = sum(p.passed for p in v.properties)
    head = (f"{v.exercise}: {'PASS' if v.passed else 'FAIL'}  {passed}/{len(v.properties)} "
            f"properties, score {v.score:.2f}  (seed {v.seed}, {v.examples} examples)")
    lines = [head]
    width = max(len(p.name) for p in v.properties)
    for p in v.properties:
        lines.append(f"  {'pass' if p.passed else 'FAIL'}  {p.name:<{width}}  {p.summary}"
                     if p.passed else f"  FAIL  {p.name:<{width}}  {p.reason}")
    for p in v.properties:
        if p.script:
            lines += ["", f"--- {p.name}: minimal failing sequence ---", p.script]
    if v.violations:
        lines += ["", "sandbox: the submission tried forbidden operations (a failing verdict):"]
        lines += [f"  - {x}" for x in v.violations]
    if v.output.strip():
        lines += ["", "candidate output (truncated):", textwrap.indent(v.output.rstrip(), "  | ")]
    return "\n".join(lines) + "\n"


def results_json(v: Verdict) -> dict:
    """Exercism results.json v3, plus grader_version, seed, examples and score."""
    tests = []
    for p in v.properties:
        tests.append({"name": p.name, "test_code": p.script or p.summary,
                      "status": "pass" if p.passed else "fail",
                      "message": None if p.passed else p.reason,
                      "output": None, "task_id": None})
    status = "error" if v.load_error else "pass" if v.passed else "fail"
    message = v.load_error or ("sandbox violations: " + "; ".join(v.violations)
                               if v.violations else None)
    return {"version": 3, "status": status, "message": message, "tests": tests,
            "exercise": v.exercise, "grader_version": __version__, "seed": v.seed,
            "examples": v.examples, "score": round(v.score, 4),
            "output": v.output[:500] or None}


def write_json(v: Verdict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(results_json(v), f, indent=2)
        f.write("\n")
