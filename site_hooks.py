"""mkdocs hooks: the study site is built from the bank, never from hand-kept lists.

Prompts (questions/) and answers (notebooks/) live outside docs/ so each has one home. These
hooks turn them into one page per question: the prompt first, with its difficulty, tags and
grader commands from the front matter, then the notebook, rendered and folded away so that
the answer is one click away and never a spoiler. Topic pages, the home page's topic map and
the navigation are generated from the same front matter.

Everything a page loads is served by the site itself: MathJax is copied from an installed
package, and the CDN loaders nbconvert writes into notebook HTML are removed (a build fails if
one survives), so the site works with no network at all.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections import Counter
from importlib import resources
from importlib.metadata import version
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File
from mkdocs.utils import get_relative_url

from solutions.bank import DIFFICULTIES, TOPICS, BankError, Question, load_bank

ROOT = Path(__file__).parent
MATHJAX_DIR = "assets/mathjax"        # where the site serves MathJax from
NOTEBOOK_CSS_DIR = "assets/notebook"  # stylesheets lifted out of notebook HTML, shared by pages
CACHE_DIR = ".cache/study-site"       # rendered notebooks (gitignored)
TOPIC_MAP_MARK = "<!-- topic-map -->"
BANK_SUMMARY_MARK = "<!-- bank-summary -->"

_build: dict = {}  # state of the current build: the bank and the notebook stylesheets


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


def _topic_uri(topic: str) -> str:
    return f"questions/{topic}/index.md"


def _question_for(page) -> Question | None:
    return _build.get("by_prompt", {}).get(page.file.src_uri)


# -- configuration and files ---------------------------------------------------------------------

def on_config(config):
    questions = _bank()
    _build.clear()
    _build.update(questions=questions, by_prompt={_prompt_uri(q): q for q in questions},
                  styles={})
    nav = [{"Home": "index.md"}]
    for topic, items in _by_topic(questions).items():
        if items:
            nav.append({TOPICS[topic]: [_topic_uri(topic)]
                        + [{f"{q.id} · {q.title}": _prompt_uri(q)} for q in items]})
    reference = ["kit.md"] + sorted(p.name for p in (ROOT / "docs").glob("*.ipynb"))
    reference += [p for p in ("site-benchmarks.md",) if (ROOT / "docs" / p).exists()]
    nav.append({"Reference": reference})
    config["nav"] = nav
    return config


@event_priority(-100)  # after mkdocs-jupyter, so the answer notebooks stay downloadable files
def on_files(files, config):
    for q in _build["questions"]:
        for uri in (_prompt_uri(q), _answer_uri(q)):
            files.append(File(uri, src_dir=str(ROOT), dest_dir=config["site_dir"],
                              use_directory_urls=config["use_directory_urls"]))
    for topic, items in _by_topic(_build["questions"]).items():
        if items:
            files.append(File.generated(config, _topic_uri(topic), content=_topic_page(topic, items)))
    for src, uri in _mathjax_files():
        files.append(File.generated(config, uri, abs_src_path=str(src)))
    return files


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

def _difficulty_badge(level: str) -> str:
    return f'<span class="qb-difficulty qb-difficulty--{level}" title="difficulty">{level}</span>'


def _tag_chips(tags) -> str:
    return " ".join(f'<span class="qb-tag">{html.escape(t)}</span>' for t in tags)


def _graded_chip(q: Question) -> str:
    return f' <span class="qb-graded" title="graded exercise">graded</span>' if q.grader else ""


def _question_table(questions, link) -> str:
    """A table of questions, left out of the search index: a search for a term should land on
    the question about it, not on every list that names it."""
    rows = ['<div class="qb-questions" data-search-exclude markdown>\n',
            "| | Question | Difficulty | Tags |", "|---|---|---|---|"]
    for q in questions:
        title = q.title.replace("|", r"\|")
        rows.append(f"| {q.id} | [{title}]({link(q)}){_graded_chip(q)} | "
                    f"{_difficulty_badge(q.difficulty)} | {_tag_chips(q.tags)} |")
    return "\n".join(rows) + "\n\n</div>"


def _counts(questions) -> str:
    by_level = Counter(q.difficulty for q in questions)
    levels = ", ".join(f"{by_level[d]} {d}" for d in DIFFICULTIES if by_level[d])
    graded = sum(1 for q in questions if q.grader)
    noun = "question" if len(questions) == 1 else "questions"
    return f"{len(questions)} {noun} ({levels})" + (f", {graded} graded" if graded else "")


def _topic_page(topic: str, questions) -> str:
    return (f"# {TOPICS[topic]}\n\n{_counts(questions)}. Each page states the problem first; "
            "the reference answer is folded away at its end.\n\n"
            + _question_table(questions, lambda q: q.prompt_path.name) + "\n")


def _topic_map(questions) -> str:
    parts, empty = [], []
    for topic, items in _by_topic(questions).items():
        if items:
            parts.append(f"### [{TOPICS[topic]}](questions/{topic}/index.md)\n\n{_counts(items)}.\n\n"
                         + _question_table(items, lambda q: _prompt_uri(q)))
        else:
            empty.append(TOPICS[topic])
    if empty:
        parts.append("Topics with no question yet: " + ", ".join(empty) + ".")
    return "\n\n".join(parts)


def _bank_summary(questions) -> str:
    topics = sum(1 for items in _by_topic(questions).values() if items)
    return f"**{_counts(questions)}** across {topics} of {len(TOPICS)} topics."


def _prompt_header(q: Question) -> str:
    topic_link = f"[{TOPICS[q.topic]}](index.md)"
    return (f'<div class="qb-meta" markdown>\n{_difficulty_badge(q.difficulty)}{_graded_chip(q)} '
            f"{topic_link} · {_tag_chips(q.tags)}\n</div>\n")


def _grader_section(q: Question) -> str:
    path = q.grader.replace("-", "_") + ".py"
    return ("\n\n## Grade your implementation\n\n"
            f"This is a coding exercise with a grader. Write a starter file, implement it, then let "
            f"the grader's property tests judge it (exit status 0 means every property held):\n\n"
            f"```bash\ngrader init {q.grader} {path}\ngrader check {q.grader} {path}\n```\n\n"
            f"`grader show {q.grader}` prints the task and the interface; `--json report.json` "
            f"writes a machine-readable report.\n")


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "index.md":
        questions = _build["questions"]
        return (markdown.replace(TOPIC_MAP_MARK, _topic_map(questions))
                .replace(BANK_SUMMARY_MARK, _bank_summary(questions)))
    q = _question_for(page)
    if q is None:
        return markdown
    page.meta["hide"] = [*page.meta.get("hide", []), "toc"]  # the width goes to the notebook
    header = _prompt_header(q)
    h1 = re.search(r"^# .+$", markdown, flags=re.MULTILINE)
    if h1:
        markdown = markdown[:h1.end()] + "\n\n" + header + markdown[h1.end():]
    else:
        markdown = f"# {q.title}\n\n{header}\n{markdown}"
    return markdown + (_grader_section(q) if q.grader else "")


# -- the answer: the notebook, rendered, offline, folded away ----------------------------------------

_MATHJAX_LOADER = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.S)
_MERMAID_LOADER = re.compile(r"<script type=\"module\">(?:(?!</script>).)*?mermaid.*?</script>", re.S)
_EMPTY_SCRIPT = re.compile(r"<script src=\"\">\s*</script>")
_STYLE = re.compile(r"<style[^>]*>(.*?)</style>", re.S)
_HEADING_ID = re.compile(r'<(h[1-6])([^>]*?)\sid="([^"]*)"([^>]*)>')
_REMOTE_LOAD = re.compile(r"""(?:\bsrc\s*=\s*["']?|import\(\s*["']|url\(\s*["']?)(?:https?:)?//""", re.I)


def offline_notebook_html(body: str, where: str) -> tuple[str, list[str]]:
    """Strip nbconvert's CDN loaders (MathJax 2, mermaid) from notebook HTML and lift its
    inline stylesheets out; returns (html, stylesheets). Fails if anything still loads remotely."""
    body = _EMPTY_SCRIPT.sub("", _MERMAID_LOADER.sub("", _MATHJAX_LOADER.sub("", body)))
    styles = [m.group(1) for m in _STYLE.finditer(body)]
    body = _STYLE.sub("", body)
    remote = _REMOTE_LOAD.search(body)
    if remote:
        snippet = body[max(0, remote.start() - 60):remote.end() + 60].replace("\n", " ")
        raise PluginError(f"{where}: the rendered notebook would load something from the network: "
                          f"...{snippet}...")
    return body, styles


def _slate_css() -> str:
    """mkdocs-jupyter's dark notebook palette, applied when the reader picks the dark scheme."""
    import mkdocs_jupyter

    dark = Path(mkdocs_jupyter.__file__).parent / "templates" / "mkdocs_html" / "assets" / "theme-dark.css"
    return dark.read_text(encoding="utf-8").replace(
        ".jupyter-wrapper", '[data-md-color-scheme="slate"] .jupyter-wrapper')


def _stylesheet_links(styles, page) -> str:
    links = []
    for css in [*styles, _slate_css()]:
        name = f"{NOTEBOOK_CSS_DIR}/{hashlib.sha256(css.encode()).hexdigest()[:12]}.css"
        _build["styles"][name] = css
        links.append(f'<link rel="stylesheet" href="{get_relative_url(name, page.url)}">')
    return "\n".join(links)


def _notebook_html(path: Path) -> str:
    """The notebook as HTML, by mkdocs-jupyter's own converter (the look of its pages), cached
    on disk by content and converter version: `mkdocs serve` rebuilds in a blink."""
    from mkdocs_jupyter.convert import nb2html

    key = hashlib.sha256(path.read_bytes())
    key.update(" ".join(f"{d}={version(d)}" for d in ("mkdocs-jupyter", "nbconvert")).encode())
    cached = ROOT / CACHE_DIR / f"{key.hexdigest()[:24]}.html"
    if cached.is_file():
        return cached.read_text(encoding="utf-8")
    body = nb2html(str(path), execute=False, theme="light", allow_errors=False, no_prompt=True,
                   custom_mathjax_url="")
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(body, encoding="utf-8")
    return body


def _render_answer(q: Question, page) -> str:
    body, styles = offline_notebook_html(_notebook_html(q.notebook_path), _answer_uri(q))
    # The answer stays out of the search index (no spoilers in results). Its headings keep their
    # anchors on an inner span, so the index does not grow an empty section per heading either.
    body = _HEADING_ID.sub(r'<\1\2\4><span id="\3"></span>', body)
    download = get_relative_url(_answer_uri(q), page.url)
    run = (f'<p class="qb-run">Run it yourself: <a href="{download}" download>'
           f"{q.notebook_path.name}</a>, or from a clone: "
           f"<code>pytest {_answer_uri(q)}</code> re-executes it and checks every output.</p>")
    return (f"{_stylesheet_links(styles, page)}\n"
            f'<details class="qb-answer" id="answer" data-search-exclude>\n'
            f"<summary>Reference answer: show the worked solution</summary>\n{run}\n{body}\n</details>\n")


def on_page_content(html_text, page, config, files):
    q = _question_for(page)
    if q is not None:
        return html_text + _render_answer(q, page)
    if "jupyter-wrapper" in html_text:  # a notebook page of its own (docs/*.ipynb)
        body, styles = offline_notebook_html(html_text, page.file.src_uri)
        return _stylesheet_links(styles, page) + "\n" + body
    return html_text


# -- previous and next stay within a topic ------------------------------------------------------------

def on_page_context(context, page, config, nav):
    q = _question_for(page)
    if q is not None:
        siblings = [x for x in _build["questions"] if x.topic == q.topic]
        pages = {p.file.src_uri: p for p in nav.pages}
        i = siblings.index(q)
        page.previous_page = pages.get(_prompt_uri(siblings[i - 1])) if i > 0 else None
        page.next_page = pages.get(_prompt_uri(siblings[i + 1])) if i + 1 < len(siblings) else None
    return context


def on_post_build(config):
    site = Path(config["site_dir"])
    for name, css in _build.get("styles", {}).items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(css, encoding="utf-8")
