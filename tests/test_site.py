"""The study site, built once with `mkdocs build --strict` and checked the way a reader meets it.

First as files: every question from the bank is on the home page's topic map and has its own page
with its front matter, folded answer and grader commands; nothing loads from outside the site;
every internal link resolves. Then in headless Chromium (Debian's `chromium`), against the site
served on 127.0.0.1: open home, go to a question, reveal the answer, see the math typeset and
the plots loaded, search by key terms, read the notebook in the dark scheme, with no console
error and no request leaving localhost. Screenshots go to test-artifacts/site/.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from solutions.bank import TOPICS, load_bank

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "site"
KEY_TERMS = ("MBU", "copy-on-write", "chunked prefill", "radix")


# -- the build ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bank():
    return load_bank(ROOT)


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    site = tmp_path_factory.mktemp("site") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return site, result.stdout + result.stderr


@pytest.fixture(scope="module")
def site(build):
    return build[0]


def page_of(q) -> str:
    """A question's page, relative to the site root."""
    return f"questions/{q.topic}/{q.slug}/index.html"


def read(site: Path, rel: str) -> str:
    return (site / rel).read_text(encoding="utf-8")


class _Refs(HTMLParser):
    """Every URL an HTML page refers to, split into what the browser loads and what it links to."""

    def __init__(self):
        super().__init__()
        self.loads: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("src") is not None:
            self.loads.append(a["src"])
        if tag == "link" and a.get("href") is not None:
            self.loads.append(a["href"])
        elif tag == "a" and a.get("href") is not None:
            self.links.append(a["href"])


def refs(html: str) -> _Refs:
    parser = _Refs()
    parser.feed(html)
    return parser


def is_remote(url: str) -> bool:
    return bool(re.match(r"^(?:[a-z][a-z0-9+.-]*:)?//", url, re.I)) and not url.startswith("data:")


# -- the site as files ------------------------------------------------------------------------------

def test_build_is_strict_and_silent(build):
    _, output = build
    assert "WARNING" not in output, output


def test_home_maps_every_topic_and_question(site, bank):
    home = read(site, "index.html")
    for q in bank:
        row = re.search(rf"<tr>\s*<td>{q.id}</td>.*?</tr>", home, re.S)
        assert row, f"{q.id} is missing from the topic map"
        assert f'href="{q.prompt_path.relative_to(ROOT).with_suffix("").as_posix()}/"' in row.group(), q.id
        assert f"qb-difficulty--{q.difficulty}" in row.group(), q.id
        for tag in q.tags:
            assert f'<span class="qb-tag">{tag}</span>' in row.group(), (q.id, tag)
    for topic in {q.topic for q in bank}:
        assert TOPICS[topic] in home


def test_question_page_puts_the_prompt_first_and_folds_the_answer(site, bank):
    for q in bank:
        page = read(site, page_of(q))
        meta = page.index('class="qb-meta"')
        answer = page.index('<details class="qb-answer"')
        assert meta < answer and page.index("</h1>") < answer, q.id
        assert not re.search(r'<details class="qb-answer"[^>]*\bopen\b', page), f"{q.id}: answer shown"
        assert f"qb-difficulty--{q.difficulty}" in page[:answer], q.id
        for tag in q.tags:
            assert f'<span class="qb-tag">{tag}</span>' in page[:answer], (q.id, tag)
        assert "jupyter-wrapper" in page[answer:], f"{q.id}: the notebook is not rendered"
        assert f'href="../../../notebooks/{q.topic}/{q.slug}.ipynb"' in page, f"{q.id}: no download"
        assert (site / "notebooks" / q.topic / f"{q.slug}.ipynb").is_file(), q.id


def test_graded_questions_give_the_exact_grader_commands(site, bank):
    for q in bank:
        page = read(site, page_of(q))
        if q.grader:
            path = q.grader.replace("-", "_") + ".py"
            for line in (f"grader init {q.grader} {path}", f"grader check {q.grader} {path}"):
                assert line in re.sub(r"<[^>]+>", "", page), f"{q.id}: missing `{line}`"
        else:
            assert "grader init" not in page, q.id


def test_previous_and_next_stay_within_the_topic(site, bank):
    for q in bank:
        siblings = [x for x in bank if x.topic == q.topic]
        i = siblings.index(q)
        footer = read(site, page_of(q)).split('<footer class="md-footer">', 1)[1]
        prev = re.search(r'href="([^"]+)" class="md-footer__link md-footer__link--prev"', footer)
        nxt = re.search(r'href="([^"]+)" class="md-footer__link md-footer__link--next"', footer)
        want_prev = f"../{siblings[i - 1].slug}/" if i > 0 else None
        want_next = f"../{siblings[i + 1].slug}/" if i + 1 < len(siblings) else None
        assert (prev and prev.group(1)) == want_prev, q.id
        assert (nxt and nxt.group(1)) == want_next, q.id


def test_nothing_loads_from_outside_the_site(site):
    for path in site.rglob("*.html"):
        remote = [u for u in refs(path.read_text(encoding="utf-8")).loads if is_remote(u)]
        assert not remote, f"{path.relative_to(site)} loads {remote}"
    for path in site.rglob("*.css"):
        remote = re.findall(r"url\(\s*['\"]?((?:https?:)?//[^)'\"]+)", path.read_text(encoding="utf-8"))
        assert not remote, f"{path.relative_to(site)} loads {remote}"
    assert (site / "assets" / "mathjax" / "tex-chtml-full.js").is_file()
    assert list((site / "assets" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))


def test_every_internal_link_and_asset_resolves(site):
    broken = []
    for path in site.rglob("*.html"):
        found = refs(path.read_text(encoding="utf-8"))
        for url in found.loads + found.links:
            parsed = urlparse(url)
            if is_remote(url) or parsed.scheme or not parsed.path:
                continue  # external links, mailto:, data:, and same-page anchors
            base = site if parsed.path.startswith("/") else path.parent  # 404.html is root-absolute
            target = (base / unquote(parsed.path).lstrip("/")).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{path.relative_to(site)} -> {url}")
    assert not broken, "\n".join(broken)


def test_search_indexes_prompts_but_not_answers(site, bank):
    docs = json.loads(read(site, "search/search_index.json"))["docs"]
    for q in bank:
        location = f"questions/{q.topic}/{q.slug}/"
        texts = [d for d in docs if d["location"].split("#")[0] == location]
        assert texts, f"{q.id} is not in the search index"
        indexed = " ".join(d["title"] + " " + d["text"] for d in texts)
        assert all(tag in indexed for tag in q.tags), q.id
        assert "reference answer" not in indexed.lower() and "jp-" not in indexed, \
            f"{q.id}: the answer leaked into the search index"


# -- the site in a real browser --------------------------------------------------------------------

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a browser that drops a connection early is not a test failure


@pytest.fixture(scope="module")
def server(site):
    httpd = _QuietServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    httpd.timeout = 10
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


def _missing(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must run the browser test (.ci/run installs Debian's chromium)",
                    pytrace=False)
    pytest.skip(f"{reason}; install Debian's chromium to run the browser test")


@pytest.fixture(scope="module")
def chromium():
    executable = shutil.which("chromium")
    if executable is None:
        _missing("chromium is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install -e '.[dev]')")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield browser
        browser.close()


class Reader:
    """A browser tab that refuses every request not for the test server and remembers what it
    refused, every console error, and every failed response."""

    def __init__(self, browser, base: str, scheme: str = "light"):
        self.base = base
        self.context = browser.new_context(viewport={"width": 1280, "height": 900},
                                           color_scheme=scheme)
        self.context.set_default_timeout(15_000)
        self.outside: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("response", lambda r: r.status >= 400 and self.errors.append(
            f"HTTP {r.status} {r.url}"))

    def _route(self, route):
        if route.request.url.startswith(self.base):
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def open(self, path: str = ""):
        self.page.goto(self.base + path)
        self.page.wait_for_load_state("load")

    def typeset(self):
        """Wait until MathJax has typeset the page."""
        self.page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
        self.page.evaluate("() => MathJax.startup.promise")

    def screenshot(self, name: str, full_page: bool = True):
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        if full_page:
            self.page.evaluate("() => window.scrollTo(0, 0)")
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)

    def assert_clean(self):
        assert not self.outside, f"requests left localhost: {self.outside}"
        assert not self.errors, f"console errors: {self.errors}"
        self.context.close()


@pytest.fixture
def reader(chromium, server):
    return Reader(chromium, server)


def _notebook(q) -> dict:
    return json.loads(q.notebook_path.read_text(encoding="utf-8"))


def _has_math_and_plot(q) -> bool:
    cells = _notebook(q)["cells"]
    math = any(c["cell_type"] == "markdown" and "$" in "".join(c["source"]) for c in cells)
    plot = any("image/png" in o.get("data", {}) for c in cells for o in c.get("outputs", []))
    return math and plot


@pytest.fixture(scope="module")
def showcase(bank):
    """The first question whose answer has both math and a plot: the one the reader studies."""
    for q in bank:
        if _has_math_and_plot(q):
            return q
    pytest.skip("no answer notebook has both math and a plot yet")


RAW_TEX = r"""(root) => {
  const raw = [];
  for (const el of root.querySelectorAll('.arithmatex, .jp-RenderedMarkdown, .jp-RenderedLatex')) {
    const copy = el.cloneNode(true);
    copy.querySelectorAll('mjx-container, code, pre').forEach((m) => m.remove());
    const left = copy.textContent.match(/\$\$|\\\(|\\\[|\\[a-zA-Z]{2,}\{?/g);
    if (left) raw.push(left.join(' ') + ' in: ' + copy.textContent.trim().slice(0, 80));
  }
  return raw;
}"""


def test_a_reader_opens_a_question_and_reveals_its_answer(reader, showcase):
    reader.open()
    reader.screenshot("home-light")
    reader.page.click(f'.md-content a[href$="{showcase.slug}/"]')
    reader.page.wait_for_url(f"**/{showcase.slug}/")
    answer = reader.page.locator("details.qb-answer")
    notebook = answer.locator(".jupyter-wrapper")
    assert not notebook.is_visible(), "the answer shows before the reader asks for it"
    assert reader.page.locator(".qb-meta .qb-difficulty").inner_text() == showcase.difficulty

    answer.locator("summary").click()
    notebook.wait_for(state="visible")
    reader.typeset()
    assert answer.locator("mjx-container").count() > 0, "no math was typeset in the answer"
    assert reader.page.evaluate(RAW_TEX, reader.page.locator("article").element_handle()) == []
    images = answer.locator(".jp-OutputArea-output img")
    assert images.count() > 0
    images.first.scroll_into_view_if_needed()
    loaded = reader.page.evaluate(
        "(els) => els.map((img) => img.complete && img.naturalWidth > 0)",
        images.element_handles())
    assert all(loaded), "a plot image did not load"
    reader.screenshot(f"{showcase.id}-light")
    reader.assert_clean()


CONTRAST = r"""(root) => {
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c;
    }
    return [255, 255, 255];
  };
  const bad = [];
  const texts = root.querySelectorAll(
    '.jp-OutputArea-output pre, .jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th, ' +
    '.jp-RenderedMarkdown p, .jp-InputArea-editor pre');
  for (const el of texts) {
    if (!el.textContent.trim()) continue;
    const fg = lum(rgb(getComputedStyle(el).color)), bg = lum(background(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < 4.5) bad.push(`${el.tagName} ${ratio.toFixed(2)}: ${el.textContent.trim().slice(0, 40)}`);
  }
  const plots = [...root.querySelectorAll('.jp-OutputArea-output img')]
    .map((img) => getComputedStyle(img).backgroundColor);
  return {bad, plots, checked: texts.length};
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_answers_are_readable_in_both_colour_schemes(chromium, server, showcase, scheme):
    reader = Reader(chromium, server, scheme)
    reader.open(page_of(showcase).removesuffix("index.html"))
    expected = {"light": "default", "dark": "slate"}[scheme]
    assert reader.page.get_attribute("body", "data-md-color-scheme") == expected
    reader.page.click("details.qb-answer summary")
    reader.typeset()
    found = reader.page.evaluate(CONTRAST, reader.page.locator("details.qb-answer").element_handle())
    assert found["checked"] > 0
    assert not found["bad"], f"text below 4.5:1 contrast in the {scheme} scheme: {found['bad'][:5]}"
    if scheme == "dark":
        assert set(found["plots"]) == {"rgb(255, 255, 255)"}, "plots need a white card in the dark"
        reader.screenshot(f"{showcase.id}-dark")
    reader.assert_clean()


def test_every_kind_of_page_loads_clean(reader, site, bank):
    """Home, a topic, and every reference page (the kit, benchmarks, docs notebooks): each is
    typeset, and nothing is fetched from outside or fails."""
    pages = ["", f"questions/{bank[0].topic}/"] + sorted(
        str(p.parent.relative_to(site)) + "/" for p in site.glob("*/index.html")
        if p.parent.name not in ("questions", "notebooks", "search", "assets"))
    for path in pages:
        reader.open(path)
        reader.typeset()
        raw = reader.page.evaluate(RAW_TEX, reader.page.locator("article").element_handle())
        assert raw == [], f"/{path}: raw TeX left: {raw}"
    reader.assert_clean()


def _about(q, term: str) -> bool:
    words = lambda s: re.sub(r"[\s\-]+", " ", s.lower())  # noqa: E731  (search splits on these)
    return words(term) in words(" ".join([q.title, *q.tags, q.body]))


@pytest.mark.parametrize("term", KEY_TERMS)
def test_search_finds_a_question_by_its_key_terms(reader, bank, term):
    expected = [q for q in bank if _about(q, term)]
    if not expected:
        reader.context.close()
        pytest.skip(f"no question is about {term!r} yet")
    reader.open()
    reader.page.click(".md-search__input")
    reader.page.keyboard.type(term, delay=20)  # as a person types: the search listens for keys
    reader.page.locator(".md-search-result__item").first.wait_for()
    hrefs = reader.page.eval_on_selector_all(
        ".md-search-result__item > a", "(links) => links.map((a) => a.getAttribute('href'))")
    pages = {urlparse(h).path.rstrip("/").rsplit("/", 1)[-1] for h in hrefs}
    assert pages & {q.slug for q in expected}, f"searching {term!r} found {hrefs}"
    if term == KEY_TERMS[0]:
        reader.screenshot("search", full_page=False)
    reader.assert_clean()
