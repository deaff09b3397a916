"""Pages made from the bank's front matter: the navigation, one page per topic, the home page's
topic map and summary, and a question page's header and progress widget."""

from __future__ import annotations

import re

from solutions.bank import TOPICS, Question

from .chips import CONFIDENCE, counts, difficulty_badge, graded_chip, progress, question_table, tag_chips
from .layout import MOCK_PAGE, TABLE_PAGE, by_topic, doc_notebooks, prompt_uri, topic_uri

TOPIC_MAP_MARK = "<!-- topic-map -->"
BANK_SUMMARY_MARK = "<!-- bank-summary -->"
REVIEW_MARK = "<!-- review-queue -->"
_ID_IN_TITLE = re.compile(r"^(q\d\d)\s*[:·.\-]\s*")


def navigation(questions) -> list:
    nav = [{"Home": "index.md"}, {"Start here": "start-here.md"},
           {"Practice": [{"All questions": TABLE_PAGE}, {"Mock interview": MOCK_PAGE},
                         {"Numbers drill": "drill.md"}]}]
    for topic, items in by_topic(questions).items():
        if items:
            nav.append({TOPICS[topic]: [topic_uri(topic)]
                        + [{f"{q.id} · {q.title}": prompt_uri(q)} for q in items]})
    nav.append({"Reference": ["kit.md"] + [p.stem + ".md" for p in doc_notebooks()]})
    return nav


def topic_page(topic: str, questions) -> str:
    return (f"# {TOPICS[topic]}\n\n{counts(questions)}. Each page states the problem first; "
            "the reference answer is folded away at its end.\n\n" + progress(topic, questions)
            + "\n\n" + question_table(questions, lambda q: q.prompt_path.name, "../../") + "\n")


def topic_map(questions) -> str:
    parts = []
    for topic, items in by_topic(questions).items():
        if items:
            parts.append(f"### [{TOPICS[topic]}](questions/{topic}/index.md)\n\n{counts(items)}.\n\n"
                         + progress(topic, items) + "\n\n"
                         + question_table(items, lambda q: prompt_uri(q), ""))
    return "\n\n".join(parts)


def bank_summary(questions) -> str:
    topics = sum(1 for items in by_topic(questions).values() if items)
    return f"**{counts(questions)}** across {topics} topics."


def review_queue() -> str:
    """The home page's review queue and progress file, filled and wired by study.js."""
    return ('<section class="qb-review" data-search-exclude aria-label="Due for review">'
            '<p class="qb-review__summary" aria-live="polite">Nothing is due: rate your confidence '
            "at the end of a question page to put it in the queue.</p>"
            '<ol class="qb-review__due"></ol>'
            '<p class="qb-review__file"><button type="button" class="md-button" '
            'data-progress="export">Export progress</button> '
            '<label class="md-button qb-review__import">Import progress <input type="file" '
            'accept=".json,application/json" data-progress="import"></label> '
            '<span class="qb-review__saved" aria-live="polite"></span></p></section>')


def home_page(markdown: str, questions) -> str:
    return (markdown.replace(TOPIC_MAP_MARK, topic_map(questions))
            .replace(BANK_SUMMARY_MARK, bank_summary(questions))
            .replace(REVIEW_MARK, review_queue()))


def prompt_header(q: Question) -> str:
    topic_link = f"[{TOPICS[q.topic]}](index.md)"
    return (f'<div class="qb-meta" markdown>\n{difficulty_badge(q.difficulty)}{graded_chip(q)} '
            f"{topic_link} · {tag_chips(q.tags, '../../../')}\n</div>\n")


def question_markdown(markdown: str, q: Question, page) -> str:
    """A prompt's Markdown with the id in its title and the header (difficulty, tags) under it."""
    page.meta["hide"] = [*page.meta.get("hide", []), "toc"]  # the width goes to the answer
    header = prompt_header(q)
    h1 = re.search(r"^# (.+)$", markdown, flags=re.MULTILINE)
    title = f"{q.id} · {_ID_IN_TITLE.sub('', h1.group(1) if h1 else q.title)}"  # ids are searchable
    page.meta["title"] = title  # the front matter's title, without the id, would win otherwise
    body = markdown[h1.end():] if h1 else markdown
    return f"# {title}\n\n{header}\n{body}"


def practice(q: Question) -> str:
    """Done and confidence, kept in the browser; study.js wires them up."""
    levels = "".join(
        f'<label><input type="radio" name="qb-confidence" value="{v}"> {t}</label>'
        for v, t in CONFIDENCE)
    return (f'<section class="qb-practice" data-qid="{q.id}" data-search-exclude '
            'aria-label="Your progress">'
            '<p class="qb-practice__title">Your progress</p>'
            '<p><label><input type="checkbox" class="qb-practice__done"> I have worked this '
            "question</label></p>"
            f'<fieldset class="qb-practice__confidence"><legend>Confidence (sets the next '
            f'review)</legend>{levels}</fieldset>'
            '<p class="qb-practice__due"></p>'
            '<p class="qb-practice__saved" aria-live="polite"></p></section>\n')
