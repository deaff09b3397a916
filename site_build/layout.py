"""Where each page and asset of the site lives, and the bank as the site reads it."""

from __future__ import annotations

from pathlib import Path

from mkdocs.exceptions import PluginError

from solutions.bank import TOPICS, BankError, Question, load_bank

ROOT = Path(__file__).resolve().parents[1]
MATHJAX_DIR = "assets/mathjax"         # where the site serves MathJax from
MATHJAX_BUNDLE = "tex-chtml.js"  # the standard TeX bundle; other TeX extensions autoload (assets.mathjax_files)
PLOTS_DIR = "assets/plots"             # notebook images, one file each, named by content
CACHE_DIR = ".cache/study-site"       # plots re-encoded for the web (gitignored)
BANK_JSON = "assets/questions.json"    # the bank for the browser: table, progress, mock interview
TABLE_PAGE = "questions/index.md"      # every question, filterable and sortable
MOCK_PAGE = "mock-interview.md"


def bank() -> list[Question]:
    try:
        return load_bank(ROOT)
    except BankError as err:
        raise PluginError(f"the question bank is malformed:\n{err}") from None


def by_topic(questions) -> dict[str, list[Question]]:
    return {t: [q for q in questions if q.topic == t] for t in TOPICS}


def prompt_uri(q: Question) -> str:
    return q.prompt_path.relative_to(ROOT).as_posix()


def answer_uri(q: Question) -> str:
    return q.notebook_path.relative_to(ROOT).as_posix()


def page_url(q: Question) -> str:
    """The question page's URL relative to the site root."""
    return prompt_uri(q).removesuffix(".md") + "/"


def topic_uri(topic: str) -> str:
    return f"questions/{topic}/index.md"


def doc_notebooks() -> list[Path]:
    """Notebooks in docs/ (the simulator's validation and the like): each becomes a page."""
    return sorted((ROOT / "docs").glob("*.ipynb"))
