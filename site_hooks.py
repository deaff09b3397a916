"""mkdocs hooks: the study site is built from the bank, never from hand-kept lists.

Prompts (questions/) and answers (notebooks/) live outside docs/ so each has one home. These
hooks turn them into one page per question: the prompt first, with its difficulty, tags and
grader commands from the front matter, then the notebook, rendered and folded away so that
the answer is one click away and never a spoiler. Topic pages, the question table, the mock
interview, the home page's topic map and the navigation come from the same front matter.

Notebooks are rendered here, not by nbconvert: their Markdown goes through the site's own
Markdown pipeline (the same math and code styles as the prompts), code cells fold away, plots
become image files with alt text from their caption, and the answer's `## Short answer` section
is shown first. Everything a page loads is served by the site itself, and MathJax only by pages
that have math, so the site works with no network at all.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import os
import re
import struct
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import markdown as markdown_lib
from markdown.extensions.toc import slugify as toc_slugify
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File
from mkdocs.utils import get_relative_url

from solutions.bank import DIFFICULTIES, TOPICS, BankError, Question, load_bank

ROOT = Path(__file__).parent
MATHJAX_DIR = "assets/mathjax"         # where the site serves MathJax from
PLOTS_DIR = "assets/plots"             # notebook images, one file each, named by content
CACHE_DIR = ".cache/study-site"       # plots re-encoded for the web (gitignored)
BANK_JSON = "assets/questions.json"    # the bank for the browser: table, progress, mock interview
TABLE_PAGE = "questions/index.md"      # every question, filterable and sortable
MOCK_PAGE = "mock-interview.md"
TOPIC_MAP_MARK = "<!-- topic-map -->"
BANK_SUMMARY_MARK = "<!-- bank-summary -->"
NOTEBOOK_MARK = "<!-- notebook -->"
MINUTES = {"easy": 8, "medium": 12, "hard": 15}  # a mock interview's time per question

EXCLUDE = "search-exclude"  # a custom element wrapping what search must skip (see _excluded)

_build: dict = {}  # state of the current build: the bank, rendered answers, plot files


# -- the bank ------------------------------------------------------------------------------------

def _bank() -> list[Question]:
    try:
        return load_bank(ROOT)
    except BankError as err:
        raise PluginError(f"the question bank is malformed:\n{err}") from None


def _by_topic(questions) -> dict[str, list[Question]]:
    return {t: [q for q in questions if q.topic == t] for t in TOPICS}


def _prompt_uri(q: Question) -> str:
    return q.prompt_path.relative_to(ROOT).as_posix()


def _answer_uri(q: Question) -> str:
    return q.notebook_path.relative_to(ROOT).as_posix()


def _page_url(q: Question) -> str:
    """The question page's URL relative to the site root."""
    return _prompt_uri(q).removesuffix(".md") + "/"


def _topic_uri(topic: str) -> str:
    return f"questions/{topic}/index.md"


def _question_for(page) -> Question | None:
    return _build.get("by_prompt", {}).get(page.file.src_uri)


def _doc_notebooks() -> list[Path]:
    """Notebooks in docs/ (the simulator's validation and the like): each becomes a page."""
    return sorted((ROOT / "docs").glob("*.ipynb"))


# -- configuration and files ---------------------------------------------------------------------

def on_config(config):
    questions = _bank()
    _build.clear()
    _build.update(questions=questions, by_prompt={_prompt_uri(q): q for q in questions},
                  answers={}, plots={})
    nav = [{"Home": "index.md"},
           {"Practice": [{"All questions": TABLE_PAGE}, {"Mock interview": MOCK_PAGE}]}]
    for topic, items in _by_topic(questions).items():
        if items:
            nav.append({TOPICS[topic]: [_topic_uri(topic)]
                        + [{f"{q.id} · {q.title}": _prompt_uri(q)} for q in items]})
    nav.append({"Reference": ["kit.md"] + [p.stem + ".md" for p in _doc_notebooks()]})
    config["nav"] = nav
    return config


def on_files(files, config):
    for q in _build["questions"]:
        for uri in (_prompt_uri(q), _answer_uri(q)):  # the page, and the notebook to download
            files.append(File(uri, src_dir=str(ROOT), dest_dir=config["site_dir"],
                              use_directory_urls=config["use_directory_urls"]))
    for topic, items in _by_topic(_build["questions"]).items():
        if items:
            files.append(File.generated(config, _topic_uri(topic), content=_topic_page(topic, items)))
    files.append(File.generated(config, TABLE_PAGE, content=_table_page(_build["questions"])))
    files.append(File.generated(config, MOCK_PAGE, content=_mock_page(_build["questions"])))
    for nb in _doc_notebooks():
        files.append(File.generated(config, nb.stem + ".md", content=_doc_notebook_page(nb)))
    files.append(File.generated(config, BANK_JSON, content=_bank_json(_build["questions"], config)))
    for src, uri in _mathjax_files():
        files.append(File.generated(config, uri, abs_src_path=str(src)))
    _build["browser_grader"] = False
    for uri, src, content in _browser_grader_files():
        files.append(File.generated(config, uri, abs_src_path=src, content=content))
        _build["browser_grader"] = True
    return files


def _browser_grader_files():
    """Pyodide and the graders' wheels, when scripts/fetch_browser_grader.py has fetched them,
    and the graders package itself as it is now: the in-browser Check runs the same suite."""
    import importlib.util
    import zipfile

    spec = importlib.util.spec_from_file_location("fetch_browser_grader",
                                                  ROOT / "scripts" / "fetch_browser_grader.py")
    fetched = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fetched)
    if not fetched.ready():
        return
    for name in fetched.CORE:
        yield f"assets/pyodide/{name}", str(fetched.core_dir() / name), None
    wheels = sorted(fetched.wheel(spec).name for spec in fetched.WHEELS)
    for name in wheels:
        yield f"assets/pyodide/{name}", str(fetched.wheels_dir() / name), None
    yield "assets/pyodide/manifest.json", None, json.dumps({"pyodide": fetched.PYODIDE, "wheels": wheels})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for package in ("graders", "solutions"):
            for path in sorted((ROOT / package).rglob("*.py")):
                info = zipfile.ZipInfo(path.relative_to(ROOT).as_posix(), date_time=(2020, 1, 1, 0, 0, 0))
                bundle.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    yield "assets/pyodide/bank.zip", None, buffer.getvalue()


def _mathjax_files():
    """MathJax 3 (the `tex-chtml-full` bundle: every TeX extension, so nothing loads lazily) and
    its web fonts, from the django-static-mathjax package; served at assets/mathjax/."""
    try:
        es5 = Path(str(resources.files("mathjax"))) / "static" / "mathjax" / "es5"
    except ModuleNotFoundError:
        es5 = None
    if es5 is None or not (es5 / "tex-chtml-full.js").is_file():
        raise PluginError("the site serves MathJax itself, from the Python package "
                          "django-static-mathjax, which is not installed: pip install -e '.[dev]'")
    yield es5 / "tex-chtml-full.js", f"{MATHJAX_DIR}/tex-chtml-full.js"
    for font in sorted((es5 / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff")):
        yield font, f"{MATHJAX_DIR}/output/chtml/fonts/woff-v2/{font.name}"


# -- generated Markdown: badges, tables, topic pages -------------------------------------------------

def _excluded(html_text: str) -> str:
    """Wrap HTML that the search index must skip. Material's search parser matches elements by
    tag name only, so a `<div data-search-exclude>` stops being skipped at the first nested
    `</div>`; a tag used nowhere else keeps the whole block out."""
    return f"<{EXCLUDE} data-search-exclude>{html_text}</{EXCLUDE}>"


def _difficulty_badge(level: str) -> str:
    return f'<span class="qb-difficulty qb-difficulty--{level}" title="difficulty">{level}</span>'


def _tag_chips(tags, base: str) -> str:
    """Each tag links to the question table, filtered by that tag."""
    return " ".join(f'<a class="qb-tag" href="{base}questions/?tag={html.escape(t)}">'
                    f"{html.escape(t)}</a>" for t in tags)


def _graded_chip(q: Question) -> str:
    return ' <span class="qb-graded" title="graded exercise">graded</span>' if q.grader else ""


def _question_table(questions, link, base: str) -> str:
    """A table of questions, left out of the search index: a search for a term should land on
    the question about it, not on every list that names it."""
    rows = ['<div class="qb-questions" data-search-exclude markdown>\n',
            "| | Question | Difficulty | Tags |", "|---|---|---|---|"]
    for q in questions:
        title = q.title.replace("|", r"\|")
        rows.append(f"| {q.id} | [{title}]({link(q)}){_graded_chip(q)} | "
                    f"{_difficulty_badge(q.difficulty)} | {_tag_chips(q.tags, base)} |")
    return "\n".join(rows) + "\n\n</div>"


def _progress(topic: str, questions) -> str:
    """A progress bar the browser fills from what the reader marked done (localStorage)."""
    n = len(questions)
    return (f'<div class="qb-progress" data-topic="{topic}" data-total="{n}" data-search-exclude>'
            f'<progress max="{n}" value="0" aria-label="{html.escape(TOPICS[topic])}: questions '
            f'done"></progress> <span class="qb-progress__text">0 of {n} done</span></div>')


def _counts(questions) -> str:
    by_level = Counter(q.difficulty for q in questions)
    levels = ", ".join(f"{by_level[d]} {d}" for d in DIFFICULTIES if by_level[d])
    graded = sum(1 for q in questions if q.grader)
    noun = "question" if len(questions) == 1 else "questions"
    return f"{len(questions)} {noun} ({levels})" + (f", {graded} graded" if graded else "")


def _topic_page(topic: str, questions) -> str:
    return (f"# {TOPICS[topic]}\n\n{_counts(questions)}. Each page states the problem first; "
            "the reference answer is folded away at its end.\n\n" + _progress(topic, questions)
            + "\n\n" + _question_table(questions, lambda q: q.prompt_path.name, "../../") + "\n")


def _topic_map(questions) -> str:
    parts = []
    for topic, items in _by_topic(questions).items():
        if items:
            parts.append(f"### [{TOPICS[topic]}](questions/{topic}/index.md)\n\n{_counts(items)}.\n\n"
                         + _progress(topic, items) + "\n\n"
                         + _question_table(items, lambda q: _prompt_uri(q), ""))
    return "\n\n".join(parts)


def _bank_summary(questions) -> str:
    topics = sum(1 for items in _by_topic(questions).values() if items)
    return f"**{_counts(questions)}** across {topics} topics."


def _table_page(questions) -> str:
    """Every question in one table: filter by topic, difficulty, tag, graded or done; sort by any
    column. The rows are plain HTML (readable without JavaScript); study.js does the filtering."""
    def options(name, label, values):
        opts = "".join(f'<option value="{html.escape(v)}">{html.escape(t)}</option>' for v, t in values)
        return (f'<label>{label} <select name="{name}" data-filter="{name}">'
                f'<option value="">any</option>{opts}</select></label>')

    topics = [(t, TOPICS[t]) for t, items in _by_topic(questions).items() if items]
    tags = sorted({t for q in questions for t in q.tags})
    filters = " ".join([
        options("topic", "Topic", topics),
        options("difficulty", "Difficulty", [(d, d) for d in DIFFICULTIES]),
        options("tag", "Tag", [(t, t) for t in tags]),
        options("graded", "Graded", [("yes", "graded"), ("no", "not graded")]),
        options("done", "Done", [("yes", "done"), ("no", "not done")])])
    head = "".join(
        f'<th scope="col" aria-sort="none"><button type="button" data-sort="{key}">{label}</button></th>'
        for key, label in (("id", "Id"), ("title", "Question"), ("topic", "Topic"),
                           ("difficulty", "Difficulty"), ("tags", "Tags"), ("graded", "Graded"),
                           ("done", "Done")))
    rows = []
    for q in questions:
        rows.append(
            f'<tr data-qid="{q.id}" data-topic="{q.topic}" data-difficulty="{q.difficulty}" '
            f'data-tags="{html.escape(" ".join(q.tags))}" data-graded="{"yes" if q.grader else "no"}">'
            f"<td>{q.id}</td>"
            f'<td><a href="../{_page_url(q)}">{html.escape(q.title)}</a></td>'
            f"<td>{html.escape(TOPICS[q.topic])}</td>"
            f'<td data-rank="{DIFFICULTIES.index(q.difficulty)}">{_difficulty_badge(q.difficulty)}</td>'
            f'<td>{_tag_chips(q.tags, "../")}</td>'
            f'<td>{"yes" if q.grader else "no"}</td>'
            f'<td class="qb-done-cell">no</td></tr>')
    return ("# All questions\n\n"
            f"{_counts(questions)}. Filter by topic, difficulty, tag, graded or done; sort by "
            "any column. What you mark done and your confidence stay in this browser "
            "(localStorage): nothing is sent anywhere.\n\n"
            f'<form class="qb-filters" data-search-exclude>{filters} '
            '<button type="reset">Clear filters</button></form>\n\n'
            '<p class="qb-count" aria-live="polite"></p>\n\n'
            '<div class="qb-table" data-search-exclude><table class="qb-question-table">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>\n")


def _mock_page(questions) -> str:
    topics = "".join(
        f'<label><input type="checkbox" name="topic" value="{t}" checked> {html.escape(TOPICS[t])} '
        f"({len(items)})</label>" for t, items in _by_topic(questions).items() if items)
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


def _bank_json(questions, config) -> str:
    """What the browser needs about each question; the rubric is read from its notebook."""
    return json.dumps([{
        "id": q.id, "title": q.title, "topic": q.topic, "topic_title": TOPICS[q.topic],
        "tags": list(q.tags), "difficulty": q.difficulty, "graded": bool(q.grader),
        "url": _page_url(q), "minutes": MINUTES[q.difficulty],
        "rubric": _answer(q, config).rubric,
    } for q in questions], ensure_ascii=False, indent=1)


def _grader_file(q: Question) -> str:
    """The file name the prompt itself uses with `grader init`, so the page names one file."""
    said = re.search(rf"grader init {re.escape(q.grader)} (\S+\.py)", q.body)
    return said.group(1) if said else q.grader.replace("-", "_") + ".py"


def _prompt_header(q: Question) -> str:
    topic_link = f"[{TOPICS[q.topic]}](index.md)"
    return (f'<div class="qb-meta" markdown>\n{_difficulty_badge(q.difficulty)}{_graded_chip(q)} '
            f"{topic_link} · {_tag_chips(q.tags, '../../../')}\n</div>\n")


def _grader_section(q: Question) -> str:
    path = _grader_file(q)
    return ("\n\n## Grade your implementation\n\n"
            f"This is a coding exercise with a grader. Write a starter file, implement it, then let "
            f"the grader's property tests judge it (exit status 0 means every property held):\n\n"
            f"```bash\ngrader init {q.grader} {path}\ngrader check {q.grader} {path}\n```\n\n"
            f"`grader show {q.grader}` prints the task and the interface; `--json report.json` "
            f"writes a machine-readable report. Or start below, in the browser, from the same "
            f"starter file, and download it when you want to grade it.\n\n{EXERCISE_MARK}\n")


# -- a graded exercise: starter in an editor, the reference solution, the bugs it catches ------------

EXERCISE_MARK = "<!-- exercise -->"
CHECK_LIMIT_S = 180  # the in-browser Check's time limit: the worker is terminated after it


def _exercise_html(q: Question, config) -> str:
    """The starter file in an editor (download it, grade it with the CLI), the reference
    solution and the catalogue of realistic bugs the grader catches, each as its diff: folded."""
    from graders import mutants, registry

    ex = registry.get(q.grader)
    md = _markdown(config, "exercise-")
    filename = _grader_file(q)
    starter = ex.starter.read_text(encoding="utf-8")
    reference = ex.reference.read_text(encoding="utf-8")

    def code(text, lang="python"):
        md.reset()
        fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
        return md.convert(f"{fence}{lang}\n{text}\n{fence}")

    bugs = []
    for m in mutants.catalogue(ex):
        history = m.label + (f" ({m.link})" if m.link else "") + f": {m.story}"
        diff = "\n".join(line for line in m.diff.splitlines() if not line.startswith(("---", "+++")))
        bugs.append(f'<li><p><strong>{html.escape(m.summary)}</strong> fails '
                    f'<code>{html.escape(m.property)}</code>. {html.escape(history)}</p>'
                    + code(diff, "diff") + "</li>")
    rows = max(12, min(40, starter.count("\n") + 2))
    return _excluded(
        f'<div class="qb-exercise" data-filename="{html.escape(filename)}">'
        f'<p><label for="qb-editor-{q.id}"><strong>Your {html.escape(filename)}</strong> '
        f"(the starter file of <code>grader init {q.grader}</code>)</label></p>"
        f'<textarea id="qb-editor-{q.id}" class="qb-editor" rows="{rows}" spellcheck="false" '
        f'autocapitalize="off" autocomplete="off" wrap="off">'
        f"{html.escape(starter)}</textarea>"
        '<p class="qb-exercise__actions"><button type="button" class="md-button" data-exercise="download">'
        f"Download {html.escape(filename)}</button> "
        '<button type="button" class="md-button" data-exercise="reset">Back to the starter</button> '
        + ('<button type="button" class="md-button md-button--primary" data-exercise="check" '
           f'data-grader="{q.grader}" data-limit="{CHECK_LIMIT_S}">Check in the browser</button> ' if _build.get("browser_grader") else "")
        + '<span class="qb-exercise__saved" aria-live="polite"></span></p>'
        + ('<p class="qb-exercise__note">Check runs what <code>grader check</code> runs (the same '
           "properties, hypothesis version and seed, so the same report and repro; only numbers "
           "from Python's built-in <code>hash()</code> differ, as the browser's Python is 32-bit), "
           "in Python compiled to WebAssembly (Pyodide, served by this site) inside a Web Worker "
           f"that is stopped after {CHECK_LIMIT_S} s. The first check loads about 13 MB.</p>"
           '<pre class="qb-out qb-exercise__report" tabindex="0" aria-live="polite" hidden></pre>'
           if _build.get("browser_grader") else "")
        +
        '<details class="qb-reference"><summary>Reference solution (a spoiler: try first)</summary>'
        f"<p><code>{ex.reference.relative_to(ROOT).as_posix()}</code>, which the grader passes.</p>"
        f"{code(reference)}</details>"
        f'<details class="qb-bugs"><summary>The {len(bugs)} bugs the grader catches, each as its '
        "diff from the reference</summary><p>Each is a realistic mistake, most from a real "
        "engine's history; the grader fails each on the property named.</p>"
        f'<ol class="qb-bug-list">{"".join(bugs)}</ol></details></div>')


_ID_IN_TITLE = re.compile(r"^(q\d\d)\s*[:·.\-]\s*")


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "index.md":
        questions = _build["questions"]
        return (markdown.replace(TOPIC_MAP_MARK, _topic_map(questions))
                .replace(BANK_SUMMARY_MARK, _bank_summary(questions)))
    if page.file.src_uri == MOCK_PAGE:
        page.meta["mathjax"] = True  # prompts with math are shown here
    q = _question_for(page)
    if q is None:
        return markdown
    page.meta["hide"] = [*page.meta.get("hide", []), "toc"]  # the width goes to the answer
    header = _prompt_header(q)
    h1 = re.search(r"^# (.+)$", markdown, flags=re.MULTILINE)
    title = f"{q.id} · {_ID_IN_TITLE.sub('', h1.group(1) if h1 else q.title)}"  # ids are searchable
    page.meta["title"] = title  # the front matter's title, without the id, would win otherwise
    body = markdown[h1.end():] if h1 else markdown
    return f"# {title}\n\n{header}\n{body}" + (_grader_section(q) if q.grader else "")


# -- notebooks, rendered by the site -----------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_H1_LINE = re.compile(r"^# .*$\n?", re.M)
_H2 = re.compile(r"^## +(.+?)\s*#*\s*$", re.M)
_HEADING_ID = re.compile(r'<(h[1-6])([^>]*?)\sid="([^"]*)"([^>]*)>')
_REMOTE_LOAD = re.compile(r"""(?:\bsrc\s*=\s*["']?|import\(\s*["']|url\(\s*["']?)(?:https?:)?//""", re.I)
_PLOT_TITLE = re.compile(r"""(?:(?:set_title|suptitle|\btitle)\(\s*|\btitle\s*=\s*)[rfbu]*(["'])(.+?)\1""")
_QUESTION_ID = re.compile(r"(?<![\w/#-])(q\d\d)(?![\w-])")


@dataclass
class Answer:
    """A notebook rendered to HTML: its short answer (if it has one), the rest, its rubric."""
    short: str = ""
    body: str = ""
    rubric: list[str] = field(default_factory=list)
    has_math: bool = False


def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else source


def _markdown(config, prefix: str):
    """The site's own Markdown pipeline (arithmatex, highlight, admonitions...), with heading
    ids prefixed so an answer's anchors never collide with its prompt's."""
    configs = {k: dict(v) for k, v in config["mdx_configs"].items()}
    configs.setdefault("toc", {})["slugify"] = lambda value, sep: prefix + toc_slugify(value, sep)
    return markdown_lib.Markdown(extensions=config["markdown_extensions"], extension_configs=configs)


def _png_size(data: bytes) -> tuple[int, int] | None:
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    return None


def _web_png(data: bytes, size: tuple[int, int] | None = None) -> bytes:
    """A notebook's PNG re-encoded with a 256-colour palette: plots have few colours, so this is
    about a third of the bytes and looks the same. Resized to `size` first when given (the 1x
    copy of a 2x plot, for 1x screens). Cached by content and size; an image with transparency,
    or one the palette would not shrink, is kept as it is (resized)."""
    from PIL import Image

    tag = "" if size is None else f"-{size[0]}x{size[1]}"
    cached = ROOT / CACHE_DIR / "plots" / f"{hashlib.sha256(data).hexdigest()[:24]}{tag}.png"
    if cached.is_file():
        return cached.read_bytes()
    try:
        with Image.open(io.BytesIO(data)) as original:
            im = original if size is None else original.resize(size, Image.Resampling.LANCZOS)
            if size is not None:
                buffer = io.BytesIO()
                im.save(buffer, "PNG")
                data = buffer.getvalue()
            out = data
            opaque = im.mode == "RGB" or (im.mode == "RGBA" and im.getextrema()[3] == (255, 255))
            if opaque:
                small = im.convert("RGB").quantize(256, method=Image.Quantize.FASTOCTREE,
                                                   dither=Image.Dither.NONE)
                buffer = io.BytesIO()
                small.save(buffer, "PNG")
                if buffer.tell() < len(data):
                    out = buffer.getvalue()
    except (OSError, SyntaxError, ValueError):
        return data  # not an image Pillow reads: served as the notebook has it
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(f".{os.getpid()}.part")  # two builds at once (test workers)
    partial.write_bytes(out)                               # never read each other's half file
    os.replace(partial, cached)
    return out


def _plain(md_text: str) -> str:
    """Prose for alt text: Markdown and TeX markup dropped, first sentence or two kept."""
    text = re.sub(r"```.*?```", " ", md_text, flags=re.S)
    prose = re.sub(r"^#+\s.*$", "", text, flags=re.M)  # a heading is the caption only alone
    text = prose if prose.strip() else re.sub(r"^#+\s*", "", text, flags=re.M)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*_`$\\]|\|", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    sentences = re.split(r"(?<=[.!?:])\s+", text)
    out = ""
    for s in sentences:
        if len(out) + len(s) > 240:
            break
        out = f"{out} {s}".strip()
    return out or text[:240]


def _title_text(literal: str) -> str:
    """A plot title from its source literal: f-string fields and TeX markup dropped."""
    text = re.sub(r"\{[^{}]*\}", "", literal).replace("$", "").replace("\\", "")
    return re.sub(r"\s+", " ", text).strip(" :,")


def _alt(code: str, caption: str, k: int, n: int) -> str:
    title = _PLOT_TITLE.search(code)
    parts = ["Plot" + (f" {k} of {n}" if n > 1 else "")
             + (f": {_title_text(title.group(2))}" if title else "")]
    if caption:
        parts.append(caption)
    return html.escape(". ".join(parts), quote=True)


class _Renderer:
    """Turns one notebook's cells into HTML with the site's Markdown, folded code, plot files."""

    def __init__(self, config, where: str, prefix: str, page_url: str):
        self.md = _markdown(config, prefix)
        self.where, self.page_url = where, page_url
        self.has_math = False
        self.caption = ""  # the last prose before a plot: its alt text

    def markdown(self, text: str) -> str:
        self.md.reset()
        out = self.md.convert(text)
        self.has_math |= 'class="arithmatex"' in out
        return out

    def prose(self, text: str) -> str:
        self.caption = _plain(text)
        return f'<div class="qb-nb-md">{self.markdown(text)}</div>'

    def plot(self, data: bytes, ext: str, code: str, k: int, n: int, meta: dict) -> str:
        size = _png_size(data) if ext == "png" else None
        width, height = meta.get("width"), meta.get("height")
        if size and not width:
            width, height = size
        sharp = self._file(_web_png(data) if ext == "png" else data, ext)
        src, srcset = sharp, ""
        if size and width and height and size[0] >= 2 * width:  # a 2x plot (the notebooks' retina)
            src = self._file(_web_png(data, (int(width), int(height))), "png")
            srcset = f' srcset="{src} 1x, {sharp} 2x"'
        dims = f' width="{width}" height="{height}"' if width and height else ""
        return (f'<figure class="qb-plot"><a href="{sharp}" title="Open the plot full size">'
                f'<img src="{src}"{srcset} alt="{_alt(code, self.caption, k, n)}"{dims} '
                f'loading="lazy" decoding="async"></a></figure>')

    def _file(self, data: bytes, ext: str) -> str:
        """Serve `data` as a plot file named by its content; its URL from this page."""
        name = f"{PLOTS_DIR}/{hashlib.sha256(data).hexdigest()[:16]}.{ext}"
        _build.setdefault("plots", {})[name] = data
        return get_relative_url(name, self.page_url)

    def output(self, out: dict, code: str, images: list) -> str:
        kind = out.get("output_type")
        if kind == "stream":
            text = _ANSI.sub("", _text(out.get("text", "")))
            if not text.strip():
                return ""
            cls = "qb-out qb-out--stderr" if out.get("name") == "stderr" else "qb-out"
            return f'<pre class="{cls}" tabindex="0">{html.escape(text.rstrip())}</pre>'
        if kind == "error":
            text = _ANSI.sub("", "\n".join(out.get("traceback", [])))
            return f'<pre class="qb-out qb-out--error" tabindex="0">{html.escape(text)}</pre>'
        data, meta = out.get("data", {}), out.get("metadata", {})
        for mime, ext in (("image/svg+xml", "svg"), ("image/png", "png"), ("image/jpeg", "jpg")):
            if mime in data:
                raw = _text(data[mime])
                blob = raw.encode() if ext == "svg" else base64.b64decode(raw)
                return self.plot(blob, ext, code, images.index(id(out)) + 1, len(images),
                                 meta.get(mime, {}))
        if "text/markdown" in data:
            return f'<div class="qb-nb-md qb-out-md">{self.markdown(_text(data["text/markdown"]))}</div>'
        if "text/html" in data:
            return f'<div class="qb-out-html" tabindex="0">{_text(data["text/html"])}</div>'
        if "text/latex" in data:
            return f'<div class="qb-nb-md">{self.markdown(_text(data["text/latex"]))}</div>'
        if "text/plain" in data:
            text = _ANSI.sub("", _text(data["text/plain"]))
            return f'<pre class="qb-out" tabindex="0">{html.escape(text)}</pre>'
        return ""

    def code(self, cell: dict) -> str:
        source = _text(cell["source"])
        parts = []
        if source.strip():
            lines = source.count("\n") + 1
            fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", source)), default=0) + 1)
            parts.append(f'<details class="qb-code"><summary>Code <span class="qb-code__lines">'
                         f'({lines} line{"s" if lines != 1 else ""})</span></summary>'
                         f'{self.markdown(f"{fence}python{chr(10)}{source}{chr(10)}{fence}")}</details>')
        outputs = cell.get("outputs", [])
        images = [id(o) for o in outputs
                  if any(m in o.get("data", {}) for m in ("image/svg+xml", "image/png", "image/jpeg"))]
        rendered = [self.output(o, source, images) for o in outputs]
        rendered = [r for r in rendered if r]
        if rendered:
            parts.append('<div class="qb-outputs">' + "\n".join(rendered) + "</div>")
        return f'<div class="qb-cell qb-cell--code">{"".join(parts)}</div>' if parts else ""


def _split_at_headings(cell: dict) -> list[dict]:
    """A Markdown cell cut before each level-2 heading, so a section can start mid-cell."""
    if cell["cell_type"] != "markdown":
        return [cell]
    chunks = re.split(r"(?m)^(?=## )", _text(cell["source"]))
    return [{**cell, "source": chunk} for chunk in chunks if chunk.strip()]


def _sections(cells) -> list[tuple[str, list[dict]]]:
    """Cells grouped by `## ` headings: [(heading or "", cells)]."""
    sections: list[tuple[str, list[dict]]] = [("", [])]
    for cell in (piece for c in cells for piece in _split_at_headings(c)):
        if cell["cell_type"] == "markdown":
            m = _H2.match(_text(cell["source"]).lstrip())
            if m:
                sections.append((m.group(1).strip(), []))
        sections[-1][1].append(cell)
    return [s for s in sections if s[1]]


def _rubric(cells) -> list[str]:
    """The rubric's bullets, each as Markdown text (continuation lines joined)."""
    items: list[str] = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        for line in _text(cell["source"]).splitlines():
            bullet = re.match(r"^(?:[-*+]|\d+[.)])\s+(.*)$", line)
            if bullet:
                items.append(bullet.group(1).strip())
            elif items and line.startswith((" ", "\t")) and line.strip():
                items[-1] += " " + line.strip()
    return items


def render_notebook(path: Path, config, page_url: str, prefix: str = "answer-") -> Answer:
    """A notebook as an Answer. The notebook's own title (its `# ` line) is dropped: the page has
    one. The `## Short answer` section, if any, is taken out to be shown first."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    where = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    r = _Renderer(config, where, prefix, page_url)
    answer = Answer()
    body = []
    for heading, cells in _sections(nb.get("cells", [])):
        html_cells = []
        for cell in cells:
            if cell["cell_type"] == "markdown":
                text = _text(cell["source"])
                text = _H1_LINE.sub("", text) if heading == "" else text
                if text.strip():
                    html_cells.append(f'<div class="qb-cell">{r.prose(text)}</div>')
            elif cell["cell_type"] == "code":
                html_cells.append(r.code(cell))
        rendered = "\n".join(c for c in html_cells if c)
        name = heading.lower()
        if name.startswith("short answer") and not answer.short:
            answer.short = rendered
            continue
        if name.startswith("rubric"):
            answer.rubric = [r.markdown(item).removeprefix("<p>").removesuffix("</p>")
                             for item in _rubric(cells)]
        body.append(rendered)
    answer.body = "\n".join(body)
    answer.has_math = r.has_math
    for part in (answer.short, answer.body):
        remote = _REMOTE_LOAD.search(part)
        if remote:
            snippet = part[max(0, remote.start() - 60):remote.end() + 60].replace("\n", " ")
            raise PluginError(f"{where}: the rendered notebook would load something from the "
                              f"network: ...{snippet}...")
    return answer


def _link_question_ids(body: str, page_url: str) -> str:
    """Mentions of other questions (`q08`) in answer prose become links to their pages."""
    pages = {q.id: q for q in _build["questions"]}

    def link(m):
        q = pages.get(m.group(1))
        if q is None:
            return m.group(0)
        return f'<a href="{get_relative_url(_page_url(q), page_url)}">{m.group(1)}</a>'

    # only in text, outside tags, code and links
    parts = re.split(r"(<pre.*?</pre>|<code.*?</code>|<a\b.*?</a>|<[^>]+>)", body, flags=re.S)
    return "".join(p if i % 2 else _QUESTION_ID.sub(link, p) for i, p in enumerate(parts))


def _answer(q: Question, config) -> Answer:
    if q.id not in _build["answers"]:
        url = _page_url(q)
        answer = render_notebook(q.notebook_path, config, url)
        answer.short = _link_question_ids(answer.short, url)
        answer.body = _link_question_ids(answer.body, url)
        _build["answers"][q.id] = answer
    return _build["answers"][q.id]


def _hide_heading_ids(body: str) -> str:
    """Headings keep their anchors on an inner span, so the search index (which skips the
    answer) does not grow an empty section per heading either."""
    return _HEADING_ID.sub(r'<\1\2\4><span id="\3"></span>', body)


def _code_toggle() -> str:
    return ('<button type="button" class="qb-code-toggle md-button" aria-pressed="false">'
            "Show all code</button>")


def _render_answer(q: Question, page, config) -> str:
    answer = _answer(q, config)
    download = get_relative_url(_answer_uri(q), page.url)
    run = (f'<p class="qb-run">Run it yourself: download <a href="{download}" download>'
           f"{q.notebook_path.name}</a>, or from a clone, after "
           "<code>pip install -e '.[dev]'</code>: <code>python scripts/execute_notebooks.py "
           f"{_answer_uri(q)}</code> re-executes it in place, and <code>pytest {_answer_uri(q)}"
           "</code> re-executes it and checks every output.</p>")
    short = (f'<section class="qb-short" aria-label="Short answer">\n{answer.short}\n</section>\n'
             if answer.short else "")
    return _excluded(
        f'<details class="qb-answer" id="answer">\n'
        f"<summary>Reference answer: show the worked solution</summary>\n"
        f'<div class="qb-answer__bar">{_code_toggle()}</div>\n'
        f"{_hide_heading_ids(short)}"
        f'<div class="qb-notebook">\n{_hide_heading_ids(answer.body)}\n</div>\n{run}\n</details>') + "\n"


def _practice(q: Question) -> str:
    """Done and confidence, kept in the browser; study.js wires them up."""
    levels = "".join(
        f'<label><input type="radio" name="qb-confidence" value="{v}"> {t}</label>'
        for v, t in ((1, "shaky"), (2, "getting there"), (3, "could teach it")))
    return (f'<section class="qb-practice" data-qid="{q.id}" data-search-exclude '
            'aria-label="Your progress">'
            '<p class="qb-practice__title">Your progress</p>'
            '<p><label><input type="checkbox" class="qb-practice__done"> I have worked this '
            "question</label></p>"
            f'<fieldset class="qb-practice__confidence"><legend>Confidence</legend>{levels}</fieldset>'
            '<p class="qb-practice__saved" aria-live="polite"></p></section>\n')


def _doc_notebook_page(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    title = next((m.group(0)[2:].strip() for c in nb.get("cells", []) if c["cell_type"] == "markdown"
                  for m in [_H1_LINE.search(_text(c["source"]))] if m), path.stem)
    return f"# {title}\n\n{NOTEBOOK_MARK}\n"


def on_page_content(html_text, page, config, files):
    q = _question_for(page)
    if q is not None:
        page.meta["mathjax"] = page.meta.get("mathjax") or _answer(q, config).has_math
        prompt, _, rest = html_text.replace(f"<p>{EXERCISE_MARK}</p>", EXERCISE_MARK).partition(EXERCISE_MARK)
        exercise = _exercise_html(q, config) + rest if q.grader else ""
        return (f'<div class="qb-prompt">{prompt}</div>\n{exercise}\n'
                + _render_answer(q, page, config) + _practice(q))
    if NOTEBOOK_MARK in html_text:  # a notebook page of its own (docs/*.ipynb)
        src = ROOT / "docs" / (Path(page.file.src_uri).stem + ".ipynb")
        answer = render_notebook(src, config, page.url, prefix="")
        page.meta["mathjax"] = answer.has_math
        download = get_relative_url(src.name, page.url)
        body = (f'<div class="qb-answer__bar">{_code_toggle()} <a href="{download}" download>'
                f"Download {src.name}</a></div>\n"
                + (f'<section class="qb-short">{answer.short}</section>' if answer.short else "")
                + f'<div class="qb-notebook">{answer.body}</div>')
        return html_text.replace(f"<p>{NOTEBOOK_MARK}</p>", NOTEBOOK_MARK).replace(NOTEBOOK_MARK, body)
    return html_text


# -- previous and next stay within a topic; MathJax only where there is math -------------------------

def on_page_context(context, page, config, nav):
    q = _question_for(page)
    if q is not None:
        siblings = [x for x in _build["questions"] if x.topic == q.topic]
        pages = {p.file.src_uri: p for p in nav.pages}
        i = siblings.index(q)
        page.previous_page = pages.get(_prompt_uri(siblings[i - 1])) if i > 0 else None
        page.next_page = pages.get(_prompt_uri(siblings[i + 1])) if i + 1 < len(siblings) else None
    return context


def on_post_page(output, page, config):
    """MathJax (about 300 kB gzipped) loads only on pages that have math to typeset."""
    if page.meta.get("mathjax") or 'class="arithmatex"' in output:
        scripts = "".join(f'<script src="{get_relative_url(u, page.url)}"></script>'
                          for u in ("javascripts/mathjax.js", f"{MATHJAX_DIR}/tex-chtml-full.js"))
        output = output.replace("</body>", scripts + "</body>", 1)
    return output


def on_post_build(config):
    site = Path(config["site_dir"])
    for name, data in _build.get("plots", {}).items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
