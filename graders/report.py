"""Verdicts as text for people and as Exercism-style results.json (v3) for machines.

The text is read on a phone as often as in a terminal: the headline counts what failed, what
passed and what was not checked; the failed properties come first, each with a reason cut to
one short line (the whole reason is printed with its repro below); the properties that were
not checked because others failed first are one plain line. The browser's Check button runs
this same module (docs/javascripts/grader), so both print the same report.
"""

from __future__ import annotations

import json
import textwrap

from graders.version import __version__
from graders.runner import FAIL, LIMIT, PASS, UNCHECKED, Verdict

RERUN = ("a limit, not the code, decided this verdict: rerun on a quieter machine "
         "(or with fewer --examples)")
BRIEF = 60      # characters of a reason on the property's line: a phone's width
WRAP = 76       # the whole reason, wrapped, above its repro


def brief(reason: str, width: int = BRIEF) -> str:
    """The reason in one line of at most `width` characters: whole if it fits, else cut at
    the last word boundary with '...' (the full reason is printed with the repro)."""
    text = " ".join(reason.split())
    if len(text) <= width:
        return text
    cut = text[:width - 3]
    space = cut.rfind(" ")
    return (cut[:space] if space > width // 2 else cut).rstrip(" ,;:") + "..."


def _names(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def headline(v: Verdict) -> str:
    """'1 failed, 3 not checked' (never a score): what a learner needs first."""
    failed = len(v.failed)
    passed = sum(p.passed for p in v.properties)
    unchecked = len(v.properties) - failed - passed
    if v.passed:
        return f"{passed} of {passed} properties pass"
    parts = [f"{failed} failed"] if failed else []
    parts += [f"{passed} passed"] if passed else []
    parts += [f"{unchecked} not checked"] if unchecked else []
    return ", ".join(parts)


def waiting_line(v: Verdict) -> str:
    """The properties not checked because others failed first, as one plain line."""
    waiting = [p for p in v.properties if p.outcome == UNCHECKED]
    if not waiting:
        return ""
    n = len(waiting)
    blockers = v.failed
    if not blockers:
        return f"{n} propert{'y is' if n == 1 else 'ies are'} not checked: {waiting[0].reason}"
    verb = "passes" if len(blockers) == 1 else "pass"
    return (f"{n} propert{'y is' if n == 1 else 'ies are'} checked once {_names(blockers)} "
            f"{verb}")


def text(v: Verdict) -> str:
    """Stable text: no timings, no absolute paths beyond what the user typed."""
    if v.load_error:
        return f"{v.exercise}: CANNOT GRADE {v.filename}\n  {v.load_error}\n"
    if v.nondeterministic:
        body = textwrap.fill(v.nondeterministic, WRAP - 2, initial_indent="  ",
                             subsequent_indent="  ")
        return f"{v.exercise}: CANNOT GRADE {v.filename}: not deterministic\n{body}\n"
    if v.limit_error:
        return f"{v.exercise}: NO VERDICT {v.filename}\n  {v.limit_error}\n  {RERUN}\n"
    word = {"pass": "PASS", "fail": "FAIL", "error": "NO VERDICT"}[v.status]
    lines = [f"{v.exercise}: {word}  {headline(v)}  (seed {v.seed}, {v.examples} examples)"]
    for p in v.properties:
        if p.failed:
            lines += [f"  FAIL  {p.name}", f"        {brief(p.reason)}"]
    for p in v.properties:
        if p.passed:
            lines.append(f"  pass  {p.name}")
    for p in v.properties:
        if p.outcome == LIMIT:
            lines += [f"  ----  {p.name}", f"        {brief(p.reason)}"]
    if waiting := waiting_line(v):
        lines.append(f"  {waiting}")
    if v.limited:
        lines += ["", RERUN]
    for p in v.properties:
        if p.failed:
            lines += ["", f"--- {p.name}: minimal failing sequence ---"]
            lines += textwrap.wrap(" ".join(p.reason.split()), WRAP)
            if p.script:
                lines += ["", p.script]
    if v.violations:
        lines += ["", "sandbox: the submission tried forbidden operations (a failing verdict):"]
        lines += [f"  - {x}" for x in v.violations]
    if v.output.strip():
        lines += ["", "candidate output (truncated):", textwrap.indent(v.output.rstrip(), "  | ")]
    return "\n".join(lines) + "\n"


def results_json(v: Verdict) -> dict:
    """Exercism results.json v3, plus grader_version, seed, examples, headline and score.

    Per test (one per property): status pass, fail, or error (not checked: a limit cut it,
    or other properties failed first, and the message says which); task_id is the property's
    number in `grader show`. Top level: error with a message when the file cannot be graded,
    is not deterministic, or a limit decided (nothing failed, something was not checked),
    else fail (its message the headline and the first failure, in brief) or pass."""
    numbers = {name: i for i, name in enumerate(v.numbering or
                                                 [p.name for p in v.properties], 1)}
    blockers = v.failed
    tests = []
    for p in v.properties:
        status = "pass" if p.passed else "fail" if p.failed else "error"
        message = (None if p.passed else p.reason if p.failed or not blockers or
                   p.outcome == LIMIT else
                   f"checked once {_names(blockers)} "
                   f"{'passes' if len(blockers) == 1 else 'pass'}")
        tests.append({"name": p.name, "test_code": p.script or p.summary, "status": status,
                      "message": message, "task_id": numbers[p.name]})
    failures = [p for p in v.properties if p.failed]
    message = (v.load_error or
               (f"not deterministic: {v.nondeterministic}" if v.nondeterministic else None) or
               (f"{v.limit_error}; {RERUN}" if v.limit_error else None) or
               (RERUN if v.limited else None) or
               ("sandbox violations: " + "; ".join(v.violations) if v.violations else None) or
               (f"{headline(v)}: {failures[0].name}: {brief(failures[0].reason)}"
                if failures else None))
    output = v.output if len(v.output) <= 500 else (
        v.output[:440] + "\n[Output was truncated. Please limit to 500 chars]")
    return {"version": 3, "status": v.status, "message": message, "tests": tests,
            "exercise": v.exercise, "grader_version": __version__, "seed": v.seed,
            "examples": v.examples,
            "headline": None if v.cannot_grade or v.limit_error else headline(v),
            "score": round(v.score, 4), "output": output or None}


def write_json(v: Verdict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(results_json(v), f, indent=2)
        f.write("\n")
