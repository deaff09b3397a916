"""Every question in one table: filter by topic, difficulty, tag, graded or done; sort by any
column. The rows are plain HTML (readable without JavaScript); study.js does the filtering."""

from __future__ import annotations

import html

from solutions.bank import DIFFICULTIES, TOPICS

from .chips import CONFIDENCE, counts, difficulty_badge, tag_chips
from .layout import by_topic, page_url


def table_page(questions) -> str:
    def options(name, label, values):
        opts = "".join(f'<option value="{html.escape(v)}">{html.escape(t)}</option>' for v, t in values)
        return (f'<label>{label} <select name="{name}" data-filter="{name}">'
                f'<option value="">any</option>{opts}</select></label>')

    topics = [(t, TOPICS[t]) for t, items in by_topic(questions).items() if items]
    tags = sorted({t for q in questions for t in q.tags})
    filters = " ".join([
        options("topic", "Topic", topics),
        options("difficulty", "Difficulty", [(d, d) for d in DIFFICULTIES]),
        options("tag", "Tag", [(t, t) for t in tags]),
        options("graded", "Graded", [("yes", "graded"), ("no", "not graded")]),
        options("done", "Done", [("yes", "done"), ("no", "not done")]),
        options("confidence", "Confidence", [(str(v), t) for v, t in CONFIDENCE] + [("0", "not rated")]),
        options("due", "Review", [("now", "due today"), ("later", "due later"), ("none", "not in the queue")])])
    head = "".join(
        f'<th scope="col" aria-sort="none"><button type="button" data-sort="{key}">{label}</button></th>'
        for key, label in (("id", "Id"), ("title", "Question"), ("topic", "Topic"),
                           ("difficulty", "Difficulty"), ("tags", "Tags"), ("graded", "Graded"),
                           ("done", "Done"), ("confidence", "Confidence"), ("due", "Next review")))
    rows = []
    for q in questions:
        rows.append(
            f'<tr data-qid="{q.id}" data-topic="{q.topic}" data-difficulty="{q.difficulty}" '
            f'data-tags="{html.escape(" ".join(q.tags))}" data-graded="{"yes" if q.grader else "no"}">'
            f"<td>{q.id}</td>"
            f'<td><a href="../{page_url(q)}">{html.escape(q.title)}</a></td>'
            f"<td>{html.escape(TOPICS[q.topic])}</td>"
            f'<td data-rank="{DIFFICULTIES.index(q.difficulty)}">{difficulty_badge(q.difficulty)}</td>'
            f'<td>{tag_chips(q.tags, "../")}</td>'
            f'<td>{"yes" if q.grader else "no"}</td>'
            f'<td class="qb-done-cell">no</td>'
            '<td class="qb-confidence-cell" data-rank="0">not rated</td>'
            '<td class="qb-due-cell"></td></tr>')
    return ("# All questions\n\n"
            f"{counts(questions)}. Filter by topic, difficulty, tag, graded, done, confidence or "
            "when a question is due for review; sort by any column. What you mark done, your "
            "confidence and the review dates stay in this browser (localStorage): nothing is "
            "sent anywhere ([how the review queue works](../index.md#review-queue)).\n\n"
            f'<form class="qb-filters" data-search-exclude>{filters} '
            '<button type="reset">Clear filters</button></form>\n\n'
            '<p class="qb-count" aria-live="polite"></p>\n\n'
            '<div class="qb-table" data-search-exclude><table class="qb-question-table">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>\n")


