"""Small HTML pieces every listing of questions shares: difficulty badges, tag chips, the graded
chip, a progress bar, counts, and a compact table of questions."""

from __future__ import annotations

import html
from collections import Counter

from solutions.bank import DIFFICULTIES, TOPICS, Question

CONFIDENCE = ((1, "shaky"), (2, "getting there"), (3, "could teach it"))  # a reader's ratings
EXCLUDE = "search-exclude"  # a custom element wrapping what search must skip (see excluded)


def excluded(html_text: str) -> str:
    """Wrap HTML that the search index must skip. Material's search parser matches elements by
    tag name only, so a `<div data-search-exclude>` stops being skipped at the first nested
    `</div>`; a tag used nowhere else keeps the whole block out."""
    return f"<{EXCLUDE} data-search-exclude>{html_text}</{EXCLUDE}>"


def difficulty_badge(level: str) -> str:
    return f'<span class="qb-difficulty qb-difficulty--{level}" title="difficulty">{level}</span>'


def tag_chips(tags, base: str) -> str:
    """Each tag links to the question table, filtered by that tag."""
    return " ".join(f'<a class="qb-tag" href="{base}questions/?tag={html.escape(t)}">'
                    f"{html.escape(t)}</a>" for t in tags)


def graded_chip(q: Question) -> str:
    return ' <span class="qb-graded" title="graded exercise">graded</span>' if q.grader else ""


def question_table(questions, link, base: str) -> str:
    """A table of questions, left out of the search index: a search for a term should land on
    the question about it, not on every list that names it."""
    rows = ['<div class="qb-questions" data-search-exclude markdown>\n',
            "| | Question | Difficulty | Tags |", "|---|---|---|---|"]
    for q in questions:
        title = q.title.replace("|", r"\|")
        rows.append(f"| {q.id} | [{title}]({link(q)}){graded_chip(q)} | "
                    f"{difficulty_badge(q.difficulty)} | {tag_chips(q.tags, base)} |")
    return "\n".join(rows) + "\n\n</div>"


def progress(topic: str, questions) -> str:
    """A progress bar the browser fills from what the reader marked done (localStorage)."""
    n = len(questions)
    return (f'<div class="qb-progress" data-topic="{topic}" data-total="{n}" data-search-exclude>'
            f'<progress max="{n}" value="0" aria-label="{html.escape(TOPICS[topic])}: questions '
            f'done"></progress> <span class="qb-progress__text">0 of {n} done</span></div>')


def counts(questions) -> str:
    by_level = Counter(q.difficulty for q in questions)
    levels = ", ".join(f"{by_level[d]} {d}" for d in DIFFICULTIES if by_level[d])
    graded = sum(1 for q in questions if q.grader)
    noun = "question" if len(questions) == 1 else "questions"
    return f"{len(questions)} {noun} ({levels})" + (f", {graded} graded" if graded else "")
