"""The numbers drill: headline numbers from the answers' claims, asked as questions.

A claim is drilled only when its notebook marks it, with a comment on the claim's line in the
claims cell (the cell that calls `claim.check()`), so marking one needs no re-execution:

    claim("critical batch B* (fitted efficiencies)", b_star, expect=221, rel=0.01,
          unit="sequences")  # drill: Llama 3.1 8B, BF16, one H100: the GEMMs' critical batch?

`# drill:` is followed by the question as a reader is asked it, with its givens; a bare
`# drill` asks "<question title>: <claim name>?". The comment may sit on any line of the call;
a claim named by an f-string is matched to the one row of the table it fills in.
The answer is the value the notebook computed (its claims table output) with the claim's unit;
a claim with a value that is not positive is never drilled (a guess is scored on log error).
"""

from __future__ import annotations

import json
import math
import re

from mkdocs.exceptions import PluginError

from solutions.bank import TOPICS

from .layout import page_url

DRILL_PAGE = "drill.md"
DRILL_JSON = "assets/drill.json"
_CALL = re.compile(r"""\bclaim\(\s*f?(["'])(.+?)\1""")
_MARK = re.compile(r"#\s*drill\b(?::\s*(.*?))?\s*$")
_ROW = re.compile(r"^\|(.+)\|\s*$")


def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else source


def _claims_cell(nb: dict) -> dict | None:
    return next((c for c in nb.get("cells", []) if c["cell_type"] == "code"
                 and "claim.check()" in _text(c["source"])), None)


def marked(cell: dict) -> list[tuple[str, str]]:
    """(claim name, question or "") for each claim the cell's source marks for the drill."""
    out, current = [], None
    for line in _text(cell["source"]).splitlines():
        call = _CALL.search(line)
        if call:
            current = call.group(2)
        mark = _MARK.search(line)
        if mark and current is not None and (current, mark.group(1) or "") not in out:
            out.append((current, (mark.group(1) or "").strip()))
    return out


def computed(cell: dict) -> dict[str, tuple[float, str]]:
    """Each claim's computed value and unit, read from the claims table the cell printed."""
    values = {}
    for out in cell.get("outputs", []):
        table = out.get("data", {}).get("text/markdown")
        if table is None:
            continue
        for line in _text(table).splitlines()[2:]:
            row = _ROW.match(line.strip())
            if not row:
                continue
            cells = [c.strip() for c in row.group(1).split("|")]
            if len(cells) >= 5:
                try:
                    values[cells[0]] = (float(cells[1]), cells[4])
                except ValueError:
                    continue
    return values


def items(q, nb: dict) -> list[dict]:
    """The drill questions of one notebook."""
    cell = _claims_cell(nb)
    if cell is None:
        return []
    values = computed(cell)
    out = []
    for name, question in marked(cell):
        if "{" in name:  # an f-string name: the table holds it with its fields filled in
            pattern = re.compile(re.sub(r"\\\{[^}]*\\\}", ".+?", re.escape(name)) + "$")
            filled = [n for n in values if pattern.match(n)]
            name = filled[0] if len(filled) == 1 else name
        if name not in values:
            raise PluginError(f"{q.id}: the drill marks claim {name!r}, which its claims table lacks "
                             "(re-execute the notebook?)")
        value, unit = values[name]
        if not (value > 0 and math.isfinite(value)):
            continue
        out.append({"qid": q.id, "title": q.title, "topic": q.topic, "topic_title": TOPICS[q.topic],
                    "claim": name, "question": question or f"{q.title}: {name}?",
                    "value": value, "unit": unit, "url": page_url(q)})
    return out


def all_items(questions) -> list[dict]:
    return [item for q in questions
            for item in items(q, json.loads(q.notebook_path.read_text(encoding="utf-8")))]


def drill_json(drilled: list[dict]) -> str:
    return json.dumps(drilled, ensure_ascii=False, indent=1)


def drill_page(drilled: list[dict]) -> str:
    n = len(drilled)
    return (
        "# Numbers drill\n\n"
        "An inference interview turns on a few numbers: a step time, a critical batch, a KV pool. "
        "Each question here is a headline number of one answer, with its givens; guess it "
        "(order of magnitude first), then see the number the answer's notebook computes and the "
        "derivation behind it. A guess scores **2** within 20% of the answer, **1** within a "
        "factor of 2 (both on the ratio, so 2x too high and 2x too low count alike), else 0; "
        "your score per topic stays in this browser.\n\n"
        f"{n} numbers are drilled so far: a notebook marks the claims that make sense as a "
        "question.\n\n"
        '<div class="qb-drill" data-search-exclude>'
        '<form class="qb-drill__setup"><p><label>Numbers per round <select name="count">'
        + "".join(f'<option value="{k}"{" selected" if k == 5 else ""}>{k}</option>' for k in (3, 5, 10))
        + '</select></label> <button type="submit" class="md-button md-button--primary">'
        'Start a round</button></p><p class="qb-drill__problem" role="alert"></p></form>'
        '<section class="qb-drill__run" hidden aria-label="Drill in progress">'
        '<p class="qb-drill__position"></p><p class="qb-drill__question"></p>'
        '<form class="qb-drill__guess"><label>Your guess <input type="text" inputmode="decimal" '
        'name="guess" autocomplete="off" required></label> <span class="qb-drill__unit"></span> '
        '<button type="submit" class="md-button">Check</button></form>'
        '<div class="qb-drill__result" aria-live="polite"></div>'
        '<p><button type="button" class="md-button" data-drill="next" hidden>Next number</button></p>'
        "</section>"
        '<p class="qb-drill__score" aria-live="polite"></p>'
        '<h2 id="score-per-topic">Your score per topic</h2>'
        '<table class="qb-drill__topics"><thead><tr><th scope="col">Topic</th>'
        '<th scope="col">Asked</th><th scope="col">Within 2x</th><th scope="col">Within 20%</th>'
        '<th scope="col">Points</th></tr></thead><tbody></tbody></table>'
        '<p><button type="button" class="md-button" data-drill="reset-scores">Forget my scores</button></p>'
        "</div>\n")
