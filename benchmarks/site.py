"""How heavy the study site is: build time, a question page, the search index.

    python benchmarks/site.py            # measures and prints a Markdown table

Builds the site with `mkdocs build --strict` a few times in fresh processes (every notebook
rendered each time: rendering is the site's own and needs no cache), then weighs what a reader downloads: each question page's HTML, the files it
loads, and the search index every page fetches. Numbers come from this run on this machine;
nothing is typed by hand, and nothing is written into the site (a stale copy would drift). What a
browser actually transfers (gzip, answer revealed) is measured and printed by the site's browser
test, tests/test_site.py::test_page_weights_stay_within_budget.
"""

from __future__ import annotations

import gzip
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from solutions.bank import load_bank  # noqa: E402

RUNS = 3


def build(site: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir",
                    str(site)], cwd=ROOT, check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return time.perf_counter() - start


class _Loads(HTMLParser):
    def __init__(self):
        super().__init__()
        self.loads: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("src"):
            self.loads.append(a["src"])
        if tag == "link" and a.get("rel") in ("stylesheet", "icon") and a.get("href"):
            self.loads.append(a["href"])


def page_weight(site: Path, page: Path) -> tuple[int, int]:
    """(HTML bytes, bytes of the HTML plus every local file it loads by src/href)."""
    html = page.read_text(encoding="utf-8")
    parser = _Loads()
    parser.feed(html)
    files = {(page.parent / u.split("?")[0]).resolve() for u in parser.loads if "//" not in u
             and not u.startswith("data:")}
    return len(html.encode()), len(html.encode()) + sum(f.stat().st_size for f in files if f.is_file())


def gz(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), compresslevel=6))


def kb(n: float) -> str:
    return f"{n / 1000:,.0f} kB"


def commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                         text=True)
    return out.stdout.strip() or "unknown"


def main() -> None:
    questions = load_bank(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        runs = [build(site) for _ in range(RUNS)]
        pages = {q.id: site / "questions" / q.topic / q.slug / "index.html" for q in questions}
        weights = {qid: page_weight(site, p) for qid, p in pages.items()}
        heaviest = max(weights, key=lambda qid: weights[qid][0])
        html_sizes = sorted(w[0] for w in weights.values())
        index = site / "search" / "search_index.json"
        index_size, index_gz, heaviest_gz = index.stat().st_size, gz(index), gz(pages[heaviest])
        plots = sum(p.stat().st_size for p in (site / "assets" / "plots").glob("*"))
        mathjax = sum(p.stat().st_size for p in (site / "assets" / "mathjax").rglob("*") if p.is_file())
        all_files = [p for p in site.rglob("*") if p.is_file()]
        total = sum(p.stat().st_size for p in all_files)

    rows = [
        (f"build (median of {RUNS})", f"{statistics.median(runs):.2f} s",
         "`mkdocs build --strict`, every notebook rendered; runs: "
         + ", ".join(f"{s:.2f} s" for s in runs)),
        ("question page HTML, median", kb(statistics.median(html_sizes)),
         f"{len(html_sizes)} pages, {kb(html_sizes[0])} to {kb(html_sizes[-1])}; plots are separate files"),
        (f"heaviest question page ({heaviest}), HTML", kb(weights[heaviest][0]),
         f"with the files it loads: {kb(weights[heaviest][1])} (gzip: {kb(heaviest_gz)} HTML)"),
        ("search index", kb(index_size), f"gzip: {kb(index_gz)}; prompts only, answers excluded"),
        ("plots, all questions", kb(plots), "PNG files, loaded lazily when an answer is revealed"),
        ("MathJax, served by the site", kb(mathjax), "tex-chtml.js, its autoloaded TeX extensions and woff fonts; only pages with math load it"),
        ("whole site", kb(total), f"{len(all_files)} files"),
    ]
    table = "\n".join(["| measure | value | detail |", "|---|---:|---|"]
                      + [f"| {a} | {b} | {c} |" for a, b, c in rows])
    print(f"Site at commit {commit()}: {len(questions)} questions, {os.cpu_count()} CPU cores, "
          f"Python {platform.python_version()}\n")
    print(table)


if __name__ == "__main__":
    main()
