"""The answers' prose in the search index, labelled as answers.

A question page's answer is kept out of Material's index (it is folded away, and a search for a
term should land on the question first). This adds it back after the index is written: one entry
per answer, titled `Answer`, linked to the folded answer (study.js opens it when a link lands
there), holding its prose and Markdown outputs, never its code or printed output.

Every page loads the index, so an answer's entry is lean: the first words of its short answer
(the teaser a result shows), then each other word of its prose once, stop words, bare numbers
and the words the prompt's own entries already hold left out. That is about a third of the bytes
of the answers' text; the page-weight test weighs the result (home <= 300 kB).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

TEASER_WORDS = 40
SEPARATOR = r"[\s\-,:;!?=\[\]()\"`/.]+"  # as mkdocs.yml's search separator splits, and . ; ?
_TAGS = re.compile(r"<[^>]+>")
_MATH = re.compile(r'<(span|div) class="arithmatex">.*?</\1>', re.S)
_PRE = re.compile(r"<pre\b.*?</pre>", re.S)
_NUMBER = re.compile(r"[\d.,%×x~≈+]+")
STOP_WORDS = frozenset("""
a about after all also an and any are as at be been before being between but by can could did do
does done down each first for from had has have how if in into is it its last less may might more
most must no not of on one only or other our out over per same should so such than that the their
them then there these they this those to two under up very was we were what when where which who
why will with would you your""".split())


def plain_text(prose_html: str) -> str:
    """Prose HTML as the words a reader searches for: no math, no code blocks, no markup."""
    text = _TAGS.sub(" ", _PRE.sub(" ", _MATH.sub(" ", prose_html)))
    return re.sub(r"\s+", " ", html.unescape(text)).strip()


def words(text: str) -> list[str]:
    return [w.strip("'*\u2018\u2019\u201c\u201d") for w in re.split(SEPARATOR, text)]


def answer_entry(answer, url: str, known: set[str]) -> dict | None:
    """One question's answer as a search entry; `known` holds the (lowercased) words the page's
    own entries already index."""
    sections = [(heading, plain_text(prose)) for heading, prose in answer.prose]
    sections = [(h, t) for h, t in sections if t]
    if not sections:
        return None
    teaser_from = next((t for h, t in sections if h.lower().startswith("short answer")), sections[0][1])
    teaser = " ".join(teaser_from.split()[:TEASER_WORDS])
    seen = set(known) | {w.lower() for w in words(teaser)}
    rest = []
    for w in words(" ".join(t for _, t in sections)):
        k = w.lower()
        if len(k) < 3 or k in STOP_WORDS or k in seen or _NUMBER.fullmatch(k):
            continue
        seen.add(k)
        rest.append(w)
    return {"location": f"{url}#answer", "title": "Answer",
            "text": html.escape(f"{teaser} … {' '.join(rest)}", quote=False)}


def add_answers(site_dir: Path, answers: list[tuple[str, object]]) -> None:
    """Append an entry per answer ((page URL, rendered answer) pairs) to the index Material's
    search plugin wrote."""
    index = Path(site_dir) / "search" / "search_index.json"
    if not index.is_file():
        return  # search is off: nothing to add to
    data = json.loads(index.read_text(encoding="utf-8"))
    known: dict[str, set[str]] = {}
    for doc in data["docs"]:
        page = doc["location"].split("#")[0]
        known.setdefault(page, set()).update(
            w.lower() for w in words(plain_text(doc["title"] + " " + doc["text"])))
    for url, answer in answers:
        entry = answer_entry(answer, url, known.get(url, set()))
        if entry:
            data["docs"].append(entry)
    index.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
