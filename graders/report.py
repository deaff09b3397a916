"""Verdicts as text for people and as Exercism-style results.json (v3) for machines."""

from __future__ import annotations

import json
import textwrap

from graders.version import __version__
from graders.runner import FAIL, LIMIT, PASS, Verdict

RERUN = ("a limit, not the code, decided this verdict: rerun on a quieter machine "
         "(or with fewer --examples)")


def text(v: Verdict) -> str:
    """Stable text: no timings, no absolute paths beyond what the user typed."""
    if v.load_error:
        return f"{v.exercise}: CANNOT GRADE {v.filename}\n  {v.load_error}\n"
    if v.limit_error:
        return f"{v.exercise}: NO VERDICT {v.filename}\n  {v.limit_error}\n  {RERUN}\n"
    passed = sum(p.passed for p in v.properties)
    word = {"pass": "PASS", "fail": "FAIL", "error": "NO VERDICT"}[v.status]
    head = (f"{v.exercise}: {word}  {passed}/{len(v.properties)} "
            f"properties, score {v.score:.2f}  (seed {v.seed}, {v.examples} examples)")
    lines = [head]
    width = max(len(p.name) for p in v.properties)
    tag = {PASS: "pass", FAIL: "FAIL", LIMIT: "----"}
    for p in v.properties:
        lines.append(f"  pass  {p.name:<{width}}  {p.summary}" if p.passed else
                     f"  {tag.get(p.outcome, '----')}  {p.name:<{width}}  {p.reason}")
    if v.limited:
        lines += ["", RERUN]
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
    """Exercism results.json v3, plus grader_version, seed, examples and score.

    Per test (one per property): status pass, fail, or error (not checked: a limit cut it,
    or other properties failed first); task_id is the property's number in `grader show`.
    Top level: error with a message when the file cannot be graded or a limit decided
    (nothing failed, something was not checked), else fail or pass."""
    numbers = {name: i for i, name in enumerate(v.numbering or
                                                 [p.name for p in v.properties], 1)}
    tests = []
    for p in v.properties:
        status = "pass" if p.passed else "fail" if p.failed else "error"
        tests.append({"name": p.name, "test_code": p.script or p.summary, "status": status,
                      "message": None if p.passed else p.reason,
                      "task_id": numbers[p.name]})
    message = (v.load_error or (f"{v.limit_error}; {RERUN}" if v.limit_error else None) or
               (RERUN if v.limited else None) or
               ("sandbox violations: " + "; ".join(v.violations) if v.violations else None))
    output = v.output if len(v.output) <= 500 else (
        v.output[:440] + "\n[Output was truncated. Please limit to 500 chars]")
    return {"version": 3, "status": v.status, "message": message, "tests": tests,
            "exercise": v.exercise, "grader_version": __version__, "seed": v.seed,
            "examples": v.examples, "score": round(v.score, 4), "output": output or None}


def write_json(v: Verdict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(results_json(v), f, indent=2)
        f.write("\n")
