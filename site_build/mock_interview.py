"""The mock interview: its page (setup, the run against the clock, the review); the bank as JSON
for the browser (the table, progress and the mock interview read it), and the rubrics apart."""

from __future__ import annotations

import html
import json

from solutions.bank import TOPICS

from .layout import by_topic, page_url

RUBRICS_JSON = "assets/rubrics.json"  # loaded by the mock interview only

MINUTES = {"easy": 8, "medium": 12, "hard": 15}  # a spoken round's time per question
CODING_MINUTES = 35  # a coding round's time per graded exercise (write it, then run the grader)


def mock_page(questions) -> str:
    topics = "".join(
        f'<label><input type="checkbox" name="topic" value="{t}" checked> {html.escape(TOPICS[t])} '
        f"({sum(1 for q in items if not q.grader)})</label>"
        for t, items in by_topic(questions).items() if any(not q.grader for q in items))
    budgets = "".join(f'<option value="{m}"{" selected" if m == 30 else ""}>{m} minutes</option>'
                      for m in (15, 30, 45, 60, 90))
    coding = sum(1 for q in questions if q.grader)
    times = ", ".join(f"{d} {m} min" for d, m in MINUTES.items())
    return (
        "# Mock interview\n\n"
        "Pick a round, a time budget and the topics; you get a random set of questions, one "
        "prompt at a time, against the clock. Talk or write your answer, then move on. At the end "
        "every answer is revealed: its short answer, a link to the full derivation, its rubric "
        "(the points a strong answer makes) to score yourself against, and the common wrong turn "
        "to check your answer for (a warning, never a point). Save the results: they are listed "
        "below and set each question's confidence and next review (the "
        "[review queue](index.md#review-queue)).\n\n"
        f"Questions are drawn until the next would not fit the budget ({times} in a spoken "
        f"round; {CODING_MINUTES} min per exercise in a coding round), so the clock runs for the "
        "questions drawn, never past the budget.\n\n"
        '<div class="qb-mock">\n'
        '<form class="qb-mock__setup" data-search-exclude>'
        '<fieldset><legend>Round</legend>'
        '<label><input type="radio" name="round" value="spoken" checked> Spoken: design and '
        "estimation, answered aloud</label> "
        f'<label><input type="radio" name="round" value="coding"> Coding: the {coding} graded '
        "exercises, written against the grader</label></fieldset>"
        f'<fieldset class="qb-mock__topics"><legend>Topics (spoken round)</legend>{topics}</fieldset>'
        f'<p><label>Time budget <select name="minutes">{budgets}</select></label></p>'
        '<p><button type="submit" class="md-button md-button--primary">Start the interview</button></p>'
        '<p class="qb-mock__problem" role="alert"></p>'
        '</form>\n'
        '<section class="qb-mock__history" data-search-exclude aria-label="Past interviews">'
        '<h2 id="past-interviews">Your past interviews</h2>'
        '<p class="qb-mock__none">None saved in this browser yet.</p>'
        '<table class="qb-mock__results" hidden><thead><tr><th scope="col">When</th>'
        '<th scope="col">Round</th><th scope="col">Questions</th><th scope="col">Score</th>'
        "</tr></thead><tbody></tbody></table></section>\n"
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
        '<p><button type="button" class="md-button md-button--primary" data-mock="save">'
        "Save the results and update my confidence</button> "
        '<button type="button" class="md-button" data-mock="again">Another interview</button> '
        '<span class="qb-mock__saved" aria-live="polite"></span></p>'
        "</section>\n</div>\n")


def bank_json(questions) -> str:
    """What every page's script needs about each question (progress, the table, the mock
    interview's draw); kept small, since every page loads it."""
    return json.dumps([{
        "id": q.id, "title": q.title, "topic": q.topic, "topic_title": TOPICS[q.topic],
        "tags": list(q.tags), "difficulty": q.difficulty, "graded": bool(q.grader),
        "url": page_url(q),
        "minutes": CODING_MINUTES if q.grader else MINUTES[q.difficulty],
    } for q in questions], ensure_ascii=False, indent=1)


def rubrics_json(questions, answer) -> str:
    """Each question's rubric for the mock interview's review, which alone loads it: its points
    and, apart, its common wrong turn; `answer(q)` is the rendered notebook."""
    return json.dumps({q.id: {"rubric": answer(q).rubric, "wrong_turn": answer(q).wrong_turn}
                       for q in questions}, ensure_ascii=False, indent=1)
