"""The mock interview: its page (setup, the run against the clock, the review), and the bank as
JSON for the browser (the table, progress and the mock interview read it)."""

from __future__ import annotations

import html
import json

from solutions.bank import TOPICS

from .layout import by_topic, page_url

MINUTES = {"easy": 8, "medium": 12, "hard": 15}  # a mock interview's time per question


def mock_page(questions) -> str:
    topics = "".join(
        f'<label><input type="checkbox" name="topic" value="{t}" checked> {html.escape(TOPICS[t])} '
        f"({len(items)})</label>" for t, items in by_topic(questions).items() if items)
    budgets = "".join(f'<option value="{m}"{" selected" if m == 30 else ""}>{m} minutes</option>'
                      for m in (15, 30, 45, 60, 90))
    return (
        "# Mock interview\n\n"
        "Pick a time budget and the topics; you get a random set of questions, one prompt at a "
        "time, against the clock. Talk or write your answer, then move on. At the end every "
        "answer is revealed: its short answer, a link to the full derivation, and its rubric "
        "(what a strong answer contains) to score yourself against.\n\n"
        '<div class="qb-mock">\n'
        '<form class="qb-mock__setup" data-search-exclude>'
        f'<fieldset><legend>Topics</legend>{topics}</fieldset>'
        f'<p><label>Time budget <select name="minutes">{budgets}</select></label> '
        '<label>Questions <input type="number" name="count" min="1" '
        f'max="{len(questions)}" value="3"></label></p>'
        '<p><button type="submit" class="md-button md-button--primary">Start the interview</button></p>'
        '</form>\n'
        '<section class="qb-mock__run" hidden aria-label="Interview in progress" '
        'data-search-exclude>'
        '<p class="qb-mock__status"><span class="qb-mock__position"></span> · '
        '<span class="qb-mock__clock" role="timer"></span></p>'
        '<div class="qb-mock__prompt"></div>'
        '<p><label>Your notes (kept on this page only)<br><textarea class="qb-mock__notes" '
        'rows="5"></textarea></label></p>'
        '<p><button type="button" class="md-button" data-mock="previous">Previous</button> '
        '<button type="button" class="md-button" data-mock="next">Next question</button> '
        '<button type="button" class="md-button md-button--primary" data-mock="finish">'
        "Finish and reveal the answers</button></p></section>\n"
        '<section class="qb-mock__review" hidden aria-label="Answers and self-scoring" '
        'data-search-exclude>'
        '<h2 id="review">Answers and self-scoring</h2>'
        '<p class="qb-mock__score" aria-live="polite"></p><div class="qb-mock__answers"></div>'
        '<p><button type="button" class="md-button" data-mock="again">Another interview</button></p>'
        "</section>\n</div>\n")


def bank_json(questions, rubric) -> str:
    """What the browser needs about each question; `rubric(q)` reads it from its notebook."""
    return json.dumps([{
        "id": q.id, "title": q.title, "topic": q.topic, "topic_title": TOPICS[q.topic],
        "tags": list(q.tags), "difficulty": q.difficulty, "graded": bool(q.grader),
        "url": page_url(q), "minutes": MINUTES[q.difficulty],
        "rubric": rubric(q),
    } for q in questions], ensure_ascii=False, indent=1)
