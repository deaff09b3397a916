"""Notebooks rendered by the site, not by nbconvert: their Markdown goes through the site's own
Markdown pipeline (the same math and code styles as the prompts), code cells fold away, plots
become image files with alt text, and the answer's `## Short answer` section is taken out to be
shown first; the `## Rubric` bullets are kept for the mock interview."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import markdown as markdown_lib
from markdown.extensions.toc import slugify as toc_slugify
from mkdocs.exceptions import PluginError
from mkdocs.utils import get_relative_url

from solutions.bank import Question

from .chips import excluded
from .layout import PLOTS_DIR, ROOT, answer_uri, page_url
from .plots import alt, plain, png_size, web_png

NOTEBOOK_MARK = "<!-- notebook -->"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_H1_LINE = re.compile(r"^# .*$\n?", re.M)
_H2 = re.compile(r"^## +(.+?)\s*#*\s*$", re.M)
_HEADING_ID = re.compile(r'<(h[1-6])([^>]*?)\sid="([^"]*)"([^>]*)>')
_REMOTE_LOAD = re.compile(r"""(?:\bsrc\s*=\s*["']?|import\(\s*["']|url\(\s*["']?)(?:https?:)?//""", re.I)
# the rubric's last bullet, `- Common wrong turn: ...` (bold or not): shown as a warning
WRONG_TURN = re.compile(r"^(?:\*\*|__)?Common wrong turn:?(?:\*\*|__)?:?\s*", re.I)
_QUESTION_ID = re.compile(r"(?<![\w/#-])(q\d\d)(?![\w-])")


@dataclass
class Answer:
    """A notebook rendered to HTML: its short answer (if it has one), the rest, its rubric: the
    points a strong answer makes, and apart from them the common wrong turn (a warning to check
    an answer against, never a point to score)."""
    short: str = ""
    body: str = ""
    rubric: list[str] = field(default_factory=list)
    wrong_turn: str = ""
    prose: list[tuple[str, str]] = field(default_factory=list)  # (section heading, prose HTML)
    has_math: bool = False


def cell_text(source) -> str:
    return "".join(source) if isinstance(source, list) else source


def site_markdown(config, prefix: str):
    """The site's own Markdown pipeline (arithmatex, highlight, admonitions...), with heading
    ids prefixed so an answer's anchors never collide with its prompt's."""
    configs = {k: dict(v) for k, v in config["mdx_configs"].items()}
    configs.setdefault("toc", {})["slugify"] = lambda value, sep: prefix + toc_slugify(value, sep)
    return markdown_lib.Markdown(extensions=config["markdown_extensions"], extension_configs=configs)


class _Renderer:
    """Turns one notebook's cells into HTML with the site's Markdown, folded code, plot files."""

    def __init__(self, config, where: str, prefix: str, page_url: str, plots: dict):
        self.md = site_markdown(config, prefix)
        self.where, self.page_url, self.plots = where, page_url, plots
        self.has_math = False
        self.caption = ""  # the last prose before a plot: its alt text
        self.prose_parts: list[str] = []  # the HTML of prose and Markdown outputs, never code

    def markdown(self, text: str) -> str:
        self.md.reset()
        out = self.md.convert(text)
        self.has_math |= 'class="arithmatex"' in out
        return out

    def prose(self, text: str) -> str:
        self.caption = plain(text)
        out = self.markdown(text)
        self.prose_parts.append(out)
        return f'<div class="qb-nb-md">{out}</div>'

    def plot(self, data: bytes, ext: str, code: str, k: int, n: int, meta: dict) -> str:
        size = png_size(data) if ext == "png" else None
        width, height = meta.get("width"), meta.get("height")
        if size and not width:
            width, height = size
        sharp = self._file(web_png(data) if ext == "png" else data, ext)
        src, srcset = sharp, ""
        if size and width and height and size[0] >= 2 * width:  # a 2x plot (the notebooks' retina)
            src = self._file(web_png(data, (int(width), int(height))), "png")
            srcset = f' srcset="{src} 1x, {sharp} 2x"'
        dims = f' width="{width}" height="{height}"' if width and height else ""
        return (f'<figure class="qb-plot"><a href="{sharp}" title="Open the plot full size">'
                f'<img src="{src}"{srcset} alt="{alt(code, self.caption, k, n)}"{dims} '
                f'loading="lazy" decoding="async"></a>'
                '<figcaption>Tap the plot to open it full size.</figcaption></figure>')

    def _file(self, data: bytes, ext: str) -> str:
        """Serve `data` as a plot file named by its content; its URL from this page."""
        name = f"{PLOTS_DIR}/{hashlib.sha256(data).hexdigest()[:16]}.{ext}"
        self.plots[name] = data
        return get_relative_url(name, self.page_url)

    def output(self, out: dict, code: str, images: list) -> str:
        kind = out.get("output_type")
        if kind == "stream":
            text = _ANSI.sub("", cell_text(out.get("text", "")))
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
                raw = cell_text(data[mime])
                blob = raw.encode() if ext == "svg" else base64.b64decode(raw)
                return self.plot(blob, ext, code, images.index(id(out)) + 1, len(images),
                                 meta.get(mime, {}))
        if "text/markdown" in data:
            out = self.markdown(cell_text(data["text/markdown"]))
            self.prose_parts.append(out)
            return f'<div class="qb-nb-md qb-out-md">{out}</div>'
        if "text/html" in data:
            return f'<div class="qb-out-html" tabindex="0">{cell_text(data["text/html"])}</div>'
        if "text/latex" in data:
            return f'<div class="qb-nb-md">{self.markdown(cell_text(data["text/latex"]))}</div>'
        if "text/plain" in data:
            text = _ANSI.sub("", cell_text(data["text/plain"]))
            return f'<pre class="qb-out" tabindex="0">{html.escape(text)}</pre>'
        return ""

    def code(self, cell: dict) -> str:
        source = cell_text(cell["source"])
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


def split_at_headings(cell: dict) -> list[dict]:
    """A Markdown cell cut before each level-2 heading, so a section can start mid-cell."""
    if cell["cell_type"] != "markdown":
        return [cell]
    chunks = re.split(r"(?m)^(?=## )", cell_text(cell["source"]))
    return [{**cell, "source": chunk} for chunk in chunks if chunk.strip()]


def sections(cells) -> list[tuple[str, list[dict]]]:
    """Cells grouped by `## ` headings: [(heading or "", cells)]."""
    sections: list[tuple[str, list[dict]]] = [("", [])]
    for cell in (piece for c in cells for piece in split_at_headings(c)):
        if cell["cell_type"] == "markdown":
            m = _H2.match(cell_text(cell["source"]).lstrip())
            if m:
                sections.append((m.group(1).strip(), []))
        sections[-1][1].append(cell)
    return [s for s in sections if s[1]]


def rubric_items(cells) -> list[str]:
    """The rubric's bullets, each as Markdown text (continuation lines joined)."""
    items: list[str] = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        for line in cell_text(cell["source"]).splitlines():
            bullet = re.match(r"^(?:[-*+]|\d+[.)])\s+(.*)$", line)
            if bullet:
                items.append(bullet.group(1).strip())
            elif items and line.startswith((" ", "\t")) and line.strip():
                items[-1] += " " + line.strip()
    return items


def render_notebook(path: Path, config, page_url: str, prefix: str = "answer-",
                    plots: dict | None = None) -> Answer:
    """A notebook as an Answer. The notebook's own title (its `# ` line) is dropped: the page has
    one. The `## Short answer` section, if any, is taken out to be shown first. Plot files go
    into `plots` (site path -> bytes), for the build to write."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    where = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    r = _Renderer(config, where, prefix, page_url, {} if plots is None else plots)
    answer = Answer()
    body = []
    for heading, cells in sections(nb.get("cells", [])):
        html_cells = []
        first_prose = len(r.prose_parts)
        for cell in cells:
            if cell["cell_type"] == "markdown":
                text = cell_text(cell["source"])
                text = _H1_LINE.sub("", text) if heading == "" else text
                if text.strip():
                    html_cells.append(f'<div class="qb-cell">{r.prose(text)}</div>')
            elif cell["cell_type"] == "code":
                html_cells.append(r.code(cell))
        rendered = "\n".join(c for c in html_cells if c)
        answer.prose.append((heading, "\n".join(r.prose_parts[first_prose:])))
        name = heading.lower()
        if name.startswith("short answer") and not answer.short:
            answer.short = rendered
            continue
        if name.startswith("rubric"):
            inline = lambda item: r.markdown(item).removeprefix("<p>").removesuffix("</p>")  # noqa: E731
            for item in rubric_items(cells):
                turn = WRONG_TURN.match(item)
                if turn:
                    answer.wrong_turn = inline(item[turn.end():])
                else:
                    answer.rubric.append(inline(item))
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


def link_question_ids(body: str, url: str, questions) -> str:
    """Mentions of other questions (`q08`) in answer prose become links to their pages."""
    pages = {q.id: q for q in questions}

    def link(m):
        q = pages.get(m.group(1))
        if q is None:
            return m.group(0)
        return f'<a href="{get_relative_url(page_url(q), url)}">{m.group(1)}</a>'

    # only in text, outside tags, code and links
    parts = re.split(r"(<pre.*?</pre>|<code.*?</code>|<a\b.*?</a>|<[^>]+>)", body, flags=re.S)
    return "".join(p if i % 2 else _QUESTION_ID.sub(link, p) for i, p in enumerate(parts))


def hide_heading_ids(body: str) -> str:
    """Headings keep their anchors on an inner span, so the search index (which skips the
    answer) does not grow an empty section per heading either."""
    return _HEADING_ID.sub(r'<\1\2\4><span id="\3"></span>', body)


def code_toggle() -> str:
    return ('<button type="button" class="qb-code-toggle md-button" aria-pressed="false">'
            "Show all code</button>")


def answer_section(q: Question, answer: Answer, url: str) -> str:
    """A question page's reference answer, folded away: the short answer first, the notebook,
    how to run it yourself; kept out of the search index."""
    download = get_relative_url(answer_uri(q), url)
    run = (f'<p class="qb-run">Run it yourself: after the README\'s install, '
           f"<code>jupyter lab {answer_uri(q)}</code>, change an assumption and re-run all: the "
           f'last cell says which claims moved (or <a href="{download}" download>download '
           f"{q.notebook_path.name}</a>).</p>")
    short = (f'<section class="qb-short" aria-label="Short answer">\n{answer.short}\n</section>\n'
             if answer.short else "")
    return excluded(
        f'<details class="qb-answer" id="answer">\n'
        f"<summary>Reference answer: show the worked solution</summary>\n"
        f'<div class="qb-answer__bar">{code_toggle()}{run}</div>\n'
        f"{hide_heading_ids(short)}"
        f'<div class="qb-notebook">\n{hide_heading_ids(answer.body)}\n</div>\n</details>') + "\n"


def doc_notebook_page(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    title = next((m.group(0)[2:].strip() for c in nb.get("cells", []) if c["cell_type"] == "markdown"
                  for m in [_H1_LINE.search(cell_text(c["source"]))] if m), path.stem)
    return f"# {title}\n\n{NOTEBOOK_MARK}\n"




def doc_notebook_body(src: Path, answer: Answer, url: str) -> str:
    """A docs/*.ipynb page's content: the notebook unfolded, with a download link."""
    download = get_relative_url(src.name, url)
    return (f'<div class="qb-answer__bar">{code_toggle()} <a href="{download}" download>'
            f"Download {src.name}</a></div>\n"
            + (f'<section class="qb-short">{answer.short}</section>' if answer.short else "")
            + f'<div class="qb-notebook">{answer.body}</div>')
