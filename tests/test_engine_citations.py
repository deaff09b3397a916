"""Every engine fact the bank states is pinned to one release and checked against its source.

A citation (`solutions.engines`) names a release, a file inside its wheel and a fragment that must
occur in that file. This file finds every citation in the notebooks (Markdown cells and rendered
Markdown outputs), the prompts, the grader specs and mutant headers, the docs and the solutions'
docstrings and comments; verifies each against the releases `scripts/fetch_engines.py` unpacks
into `.cache/engines/`; and counts the engine snapshots the bank refers to in any form (the older
`vllm-project/vllm@<sha>`, `vllm@<sha>`, blob URLs at a commit, `sglang@...` too): at most the
pinned release and two labelled historical ones per engine.

Without `.cache/engines/` the verification is skipped with the reason (run
`python scripts/fetch_engines.py`); under `CI=true` the test fetches the releases itself, and
fails if it cannot.
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from solutions import engines
from solutions.engines import Citation, CitationError, check, find_citations, scan_citations, snapshots

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "engines"
IN_CI = os.environ.get("CI") == "true"


# -- where the bank states engine facts ---------------------------------------------------------

def _notebook_texts(path: Path, prose_only: bool, root: Path = ROOT):
    """(label, text) of a notebook's Markdown cells and Markdown outputs; with prose_only=False
    also its code and its other outputs (an old snapshot in a comment is a snapshot too)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    rel = path.relative_to(root).as_posix()
    for n, cell in enumerate(cells):
        source = "".join(cell.get("source", ""))
        if cell["cell_type"] == "markdown" or not prose_only:
            yield f"{rel} cell {n}", source
        for k, output in enumerate(cell.get("outputs", [])):
            data = output.get("data", {})
            texts = [data["text/markdown"]] if "text/markdown" in data else []
            if not prose_only:
                texts += [data.get("text/plain", ""), output.get("text", "")]
            for text in texts:
                text = "".join(text)
                if text:
                    yield f"{rel} cell {n} output {k}", text


def _mutant_header(text: str) -> str:
    return text.split("\n\n", 1)[0]


def bank_texts(root: Path = ROOT, prose_only: bool = True):
    """(label, text) of every place the bank states engine facts."""
    files = sorted([*root.glob("questions/**/*.md"), *root.glob("docs/**/*.md"), root / "README.md",
                    *root.glob("solutions/**/*.py"), *root.glob("graders/**/*.py")])
    for path in files:
        if path.is_file():
            yield path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")
    for path in sorted(root.glob("graders/exercises/*/mutants/*.diff")):
        text = path.read_text(encoding="utf-8")
        yield path.relative_to(root).as_posix(), _mutant_header(text) if prose_only else text
    for path in sorted([*root.glob("notebooks/**/*.ipynb"), *root.glob("docs/**/*.ipynb")]):
        yield from _notebook_texts(path, prose_only, root)


def citation_problems(label: str, text: str, root: Path,
                      dists=("vllm", "sglang", "nano-vllm")) -> tuple[list[Citation], list[str]]:
    """The citations of `dists` in one text and what is wrong with any, each naming where it is
    (a malformed citation is reported whatever its dist)."""
    found, errors = scan_citations(text)
    found = [c for c in found if c.dist in dists]
    problems = [f"{label} {error}" for error in errors]
    problems += [f"{label} line {c.line}: {problem}"
                 for c in found if (problem := check(c, root)) is not None]
    return found, problems


# -- the parser ----------------------------------------------------------------------------------

def test_finds_a_citation_with_its_fragment():
    text = ("The threshold is off by default\n"
            "(`vllm==0.33.0:vllm/config/scheduler.py` `long_prefill_token_threshold: int =\n"
            "Field(default=0, ge=0)`).")
    assert find_citations(text) == [Citation("vllm", "0.33.0", "vllm/config/scheduler.py",
                                             "long_prefill_token_threshold: int = Field(default=0, ge=0)",
                                             2)]


@pytest.mark.parametrize("between", [" ", ": ", ", ", "\n", "\n    ", ":\n    ", "\n# "])
def test_fragment_may_follow_after_a_colon_a_comma_or_a_space(between):
    text = f"`sglang==0.5.23:sglang/srt/server_args.py`{between}`schedule_policy: str = \"fcfs\"`"
    (citation,) = find_citations(text)
    assert (citation.dist, citation.path, citation.fragment) == (
        "sglang", "sglang/srt/server_args.py", 'schedule_policy: str = "fcfs"')


def test_double_backtick_fragment_and_nano_vllm_commit():
    text = (f"`nano-vllm@{engines.NANO_VLLM}:nanovllm/engine/scheduler.py` "
            "`` self.running.pop() `` and `vllm==0.6.3:vllm/core/block_manager_v1.py` `class Block`")
    nano, old = find_citations(text)
    assert (nano.dist, nano.version, nano.fragment) == ("nano-vllm", engines.NANO_VLLM,
                                                        "self.running.pop()")
    assert (old.version, old.fragment) == ("0.6.3", "class Block")


def test_text_that_is_not_a_citation_is_left_alone():
    text = "Install `vllm==0.33.0` and run `vllm serve`; `sglang` too; see `vllm/config/vllm.py`."
    assert find_citations(text) == []


@pytest.mark.parametrize("text, says", [
    ("see `vllm==0.33.0:vllm/config/vllm.py` for the default", "not followed by a code span"),
    ("`vllm==0.33.0:vllm/config/vllm.py`", "not followed by a code span"),
    ("`vllm==0.33.0:vllm/config/vllm.py`\n\n`class VllmConfig`", "not followed by a code span"),
    ("`vllm==0.33.0:vllm/config/vllm.py` and `class VllmConfig`", "not followed by a code span"),
    ("`vllm=0.33.0:vllm/config/vllm.py` `x`", "is not <dist>==<version>:<path>"),
    ("`vllm==v0.33.0:vllm/config/vllm.py` `x`", "is not <dist>==<version>:<path>"),
    ("`nano-vllm@bb823b3:nanovllm/config.py` `x`", "40-hex commit"),
    ("`sglang==0.5.23:python/sglang/srt/server_args.py` `x`", "starts with 'sglang/'"),
    ("`vllm==0.33.0:config/vllm.py` `x`", "starts with 'vllm/'"),
    ("`vllm==0.33.0:vllm/../setup.py` `x`", "climbs out"),
    ("`vllm==0.33.0:vllm/a.py` `vllm==0.33.0:vllm/b.py` `x`", "followed by another citation"),
    ("`vllm==0.33.0:vllm/a.py` `# `grammar_init` is invoked`", "at least 4 characters"),
])
def test_malformed_citation_names_its_line_and_the_problem(text, says):
    with pytest.raises(CitationError, match="line 2") as error:
        find_citations("first line\n" + text)
    assert says in str(error.value)


def _release(tmp_path: Path) -> Path:
    source = engines.release_dir(tmp_path, "vllm", "0.33.0") / "vllm" / "config" / "scheduler.py"
    source.parent.mkdir(parents=True)
    source.write_text("class SchedulerConfig:\n    long_prefill_token_threshold:   int\n"
                      "        = 0\n", encoding="utf-8")
    return tmp_path


def test_fragment_is_compared_with_whitespace_runs_as_one_space(tmp_path):
    root = _release(tmp_path)
    text = "`vllm==0.33.0:vllm/config/scheduler.py` `long_prefill_token_threshold: int = 0`"
    assert citation_problems("doc.md", text, root) == (find_citations(text), [])


def test_missing_fragment_names_the_file_the_line_and_the_fragment(tmp_path):
    root = _release(tmp_path)
    text = "x\n`vllm==0.33.0:vllm/config/scheduler.py` `long_prefill_token_threshold: int = 2048`"
    _, problems = citation_problems("notebooks/q01.ipynb cell 3", text, root)
    assert problems == ["notebooks/q01.ipynb cell 3 line 2: vllm==0.33.0:vllm/config/scheduler.py: "
                        "fragment `long_prefill_token_threshold: int = 2048` is not in the file"]


def test_every_malformed_citation_of_a_text_is_reported_and_the_good_ones_kept():
    text = ("`vllm==0.33.0:vllm/a.py` alone\n`vllm==0.33.0:vllm/b.py` `class B`\n"
            "`sglang==0.5.23:python/sglang/c.py` `def c(`")
    found, errors = scan_citations(text)
    assert [c.path for c in found] == ["vllm/b.py"]
    assert [str(e)[:6] for e in errors] == ["line 1", "line 3"]


def test_a_malformed_citation_is_reported_even_when_only_some_dists_are_checked(tmp_path):
    text = "ok\n`vllm==0.33.0:vllm/config/vllm.py` alone"
    _, problems = citation_problems("q.md", text, _release(tmp_path), dists=("sglang",))
    assert len(problems) == 1 and problems[0].startswith("q.md line 2: ")


def test_missing_file_and_missing_release_are_named(tmp_path):
    root = _release(tmp_path)
    text = "`vllm==0.33.0:vllm/config/cache.py` `class CacheConfig` `sglang==0.5.23:sglang/a.py` `def main()`"
    _, problems = citation_problems("q.md", text, root)
    assert problems[0] == "q.md line 1: vllm==0.33.0:vllm/config/cache.py: no such file in vllm 0.33.0"
    assert problems[1].startswith("q.md line 1: sglang==0.5.23:sglang/a.py: release sglang 0.5.23 "
                                  "is not fetched")


def test_source_url_is_the_file_at_the_release_tag():
    vllm, sglang, nano = find_citations(
        "`vllm==0.33.0:vllm/config/vllm.py` `class VllmConfig` `sglang==0.5.23:sglang/srt/server_args.py` `class ServerArgs` "
        f"`nano-vllm@{engines.NANO_VLLM}:nanovllm/engine/block_manager.py` `class BlockManager`")
    assert engines.source_url(vllm) == \
        "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/vllm.py"
    assert engines.source_url(sglang) == \
        "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/server_args.py"
    assert engines.source_url(nano) == ("https://github.com/GeeeekExplorer/nano-vllm/blob/"
                                        f"{engines.NANO_VLLM}/nanovllm/engine/block_manager.py")


def test_snapshots_are_found_in_every_form():
    text = ("`vllm==0.33.0:vllm/a.py` `x`\n"
            "vllm-project/vllm@b4622cf924bc72504aed99e486062d6633fde39e:vllm/v1/core/sched/scheduler.py\n"
            "vllm@b4622cf and https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/a.py\n"
            "https://github.com/vllm-project/vllm/blob/main/vllm/a.py sglang@006b0e3d317f\n"
            "https://github.com/sgl-project/sglang/tree/v0.5.23/python GeeeekExplorer/nano-vllm@bb823b3e\n"
            "vllm-project/vllm#12345, https://github.com/vllm-project/vllm/pull/9 and\n"
            "https://github.com/GeeeekExplorer/nano-vllm/commit/f64d821c2057e2f45d0accccf5b39fd6c1438473 "
            "are no snapshots")
    found = {(s.engine, s.ref, s.line) for s in snapshots(text)}
    assert {s.text for s in snapshots(text) if s.cited} == {"vllm==0.33.0:"}
    assert found == {("vllm", "0.33.0", 1), ("vllm", "b4622cf924bc72504aed99e486062d6633fde39e", 2),
                     ("vllm", "b4622cf", 3), ("vllm", "0.33.0", 3), ("vllm", "main", 4),
                     ("sglang", "006b0e3d317f", 4), ("sglang", "0.5.23", 5),
                     ("nano-vllm", "bb823b3e", 5)}
    assert engines.distinct_refs(["b4622cf", "b4622cf924bc72504aed99e486062d6633fde39e", "main"]) == \
        {"b4622cf924bc72504aed99e486062d6633fde39e", "main"}


def test_the_pins():
    assert all(len(engines.HISTORICAL[e]) <= 2 for e in engines.HISTORICAL)
    assert set(engines.releases()) == set(engines.WHEELS), "every release has its wheel pinned"


# -- the bank ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def releases_root() -> Path:
    sys.path.insert(0, str(ROOT / "scripts"))
    import fetch_engines
    if not fetch_engines.all_ready():
        if not IN_CI:
            pytest.skip(f"the engine releases are not in {CACHE.relative_to(ROOT)}/: run "
                        "`python scripts/fetch_engines.py` (CI fetches them itself)")
        try:
            fetch_engines.fetch()
        except (Exception, SystemExit) as error:
            pytest.fail(f"CI could not fetch the engine releases: {error}", pytrace=False)
    return CACHE


def test_every_release_citation_holds_in_its_release(releases_root):
    """Every vLLM and SGLang citation (and every malformed one) in the bank."""
    cited, problems = [], []
    for label, text in bank_texts():
        found, wrong = citation_problems(label, text, releases_root, dists=("vllm", "sglang"))
        cited += [(label, c) for c in found]
        problems += wrong
    counts = defaultdict(int)
    for _, c in cited:
        counts[str(c).split(":")[0]] += 1
    print("engine citations in the bank:", dict(sorted(counts.items())))
    assert not problems, f"{len(problems)} engine citations do not hold:\n" + "\n".join(problems)


def test_every_nano_vllm_citation_holds_at_its_commit():
    """nano-vllm is not on PyPI: its citations are verified in a checkout of the pinned commit at
    .cache/engines/nano-vllm-<commit>/, which `python scripts/fetch_engines.py` makes from GitHub's
    archive where GitHub is reachable. CI reaches only package registries, so there (and wherever
    the checkout is missing) this check is skipped with the count it could not verify; the vLLM
    and SGLang checks above never skip under CI."""
    cited = [(label, c) for label, text in bank_texts() for c in scan_citations(text)[0]
             if c.dist == "nano-vllm"]
    if not cited:
        return
    checkout = engines.release_dir(CACHE, "nano-vllm", engines.NANO_VLLM)
    if not checkout.is_dir():
        pytest.skip(f"{len(cited)} nano-vllm citations not verified: no checkout at {checkout} "
                    "(nano-vllm is not on PyPI; `python scripts/fetch_engines.py` fetches it where "
                    "GitHub is reachable)")
    problems = [f"{label} line {c.line}: {p}" for label, c in cited if (p := check(c, CACHE))]
    assert not problems, "\n".join(problems)


def test_at_most_the_pinned_and_two_historical_snapshots_per_engine():
    where = defaultdict(lambda: defaultdict(set))      # engine -> ref -> {label line}
    for label, text in bank_texts(prose_only=False):
        for s in snapshots(text):
            where[s.engine][s.ref].add(label.split(" cell ")[0])
    report, counts = [], {}
    for engine in engines.ENGINES:
        refs = engines.distinct_refs(where[engine])
        counts[engine] = len(refs)
        for ref in sorted(r for r in refs if not engines.is_allowed(engine, r)):
            files = sorted({f for r in where[engine] if ref.startswith(r) for f in where[engine][r]})
            report.append(f"{engine} @ {ref}: {', '.join(files)}")
    print("engine snapshots in the bank:", counts)
    assert not report, (f"{len(report)} engine snapshots besides the pinned and historical releases "
                        f"{engines.PINNED} {engines.HISTORICAL} nano-vllm@{engines.NANO_VLLM[:8]}"
                        " (convert them to the citation format of solutions/engines.py):\n"
                        + "\n".join(report))


def test_engine_references_are_citations():
    """A reference to an allowed snapshot in an old form (`GeeeekExplorer/nano-vllm@<commit>:<path>`,
    a blob URL at `v0.33.0`) names no fragment, so nothing verifies it: it must be a citation."""
    report = defaultdict(list)
    for label, text in bank_texts(prose_only=False):
        for s in snapshots(text):
            if not s.cited and engines.is_allowed(s.engine, s.ref):
                report[label.split(" cell ")[0]].append(s.text)
    assert not report, ("engine references outside the citation format of solutions/engines.py:\n"
                        + "\n".join(f"{f}: {', '.join(sorted(set(t)))}" for f, t in sorted(report.items())))


# -- the fetch script's nano-vllm path (GitHub's archive of the pinned commit), without a network --

def _fetch_script():
    sys.path.insert(0, str(ROOT / "scripts"))
    import fetch_engines
    return fetch_engines


def test_nano_vllm_archive_is_unpacked_by_its_paths_in_the_repository(tmp_path, monkeypatch):
    import io
    import tarfile
    import urllib.request
    fetch_engines = _fetch_script()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in (("nanovllm/engine/scheduler.py", b"self.running.pop()\n"),
                           ("assets/logo.png", b"\x89PNG")):
            info = tarfile.TarInfo(f"nano-vllm-{engines.NANO_VLLM}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    class Response(io.BytesIO):
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    urls = []
    monkeypatch.setattr(fetch_engines, "CACHE", tmp_path)
    monkeypatch.setattr(urllib.request, "urlopen",
                        lambda url, timeout: urls.append(url) or Response(buffer.getvalue()))
    assert fetch_engines.fetch_nano_vllm() == f"nano-vllm@{engines.NANO_VLLM[:8]}"
    checkout = engines.release_dir(tmp_path, "nano-vllm", engines.NANO_VLLM)
    assert (checkout / "nanovllm/engine/scheduler.py").read_text() == "self.running.pop()\n"
    assert not (checkout / "assets").exists(), "only source and text files are kept"
    assert urls == [f"https://codeload.github.com/GeeeekExplorer/nano-vllm/tar.gz/{engines.NANO_VLLM}"]
    assert fetch_engines.fetch_nano_vllm() is None and len(urls) == 1, "a second fetch does nothing"
    (citation,) = find_citations(f"`nano-vllm@{engines.NANO_VLLM}:nanovllm/engine/scheduler.py` "
                                 "`self.running.pop()`")
    assert check(citation, tmp_path) is None


def test_nano_vllm_fetch_failure_is_reported_not_raised(tmp_path, monkeypatch):
    import urllib.request
    fetch_engines = _fetch_script()
    monkeypatch.setattr(fetch_engines, "CACHE", tmp_path)

    def unreachable(url, timeout):
        raise OSError("Name or service not known")

    monkeypatch.setattr(urllib.request, "urlopen", unreachable)
    message = fetch_engines.fetch_nano_vllm()
    assert "not fetched from https://codeload.github.com/" in message and "Name or service" in message
    assert not engines.release_dir(tmp_path, "nano-vllm", engines.NANO_VLLM).exists()


def _fake_pip(wheel_bytes: bytes, name: str):
    """A stand-in for `pip download`: writes the given wheel into --dest."""
    def run(args, check, timeout):
        dest = Path(args[args.index("--dest") + 1])
        (dest / name).write_bytes(wheel_bytes)
    return run


def _wheel(files: dict[str, bytes]) -> bytes:
    import io
    import zipfile
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_a_wheel_is_checked_against_its_sha256_and_only_its_source_unpacked(tmp_path, monkeypatch):
    import hashlib
    fetch_engines = _fetch_script()
    wheel = _wheel({"vllm/config/cache.py": b"DEFAULT_BLOCK_SIZE: ClassVar[int] = 16\n",
                    "vllm/_C.abi3.so": b"\x7fELF", "vllm-9.9.9.dist-info/RECORD": b"x"})
    name = "vllm-9.9.9-cp38-abi3-manylinux_2_28_x86_64.whl"
    monkeypatch.setattr(fetch_engines, "CACHE", tmp_path)
    monkeypatch.setattr(fetch_engines, "releases", lambda: [("vllm", "9.9.9")])
    monkeypatch.setattr(fetch_engines.subprocess, "run", _fake_pip(wheel, name))
    monkeypatch.setattr(fetch_engines, "WHEELS", {("vllm", "9.9.9"): (name, "0" * 64)})
    with pytest.raises(SystemExit, match="sha256"):
        fetch_engines.fetch()
    assert not fetch_engines.all_ready(), "a wheel that fails its hash is not unpacked"
    monkeypatch.setattr(fetch_engines, "WHEELS",
                        {("vllm", "9.9.9"): (name, hashlib.sha256(wheel).hexdigest())})
    assert fetch_engines.fetch() == ["vllm==9.9.9"] and fetch_engines.all_ready()
    unpacked = engines.release_dir(tmp_path, "vllm", "9.9.9")
    assert sorted(p.relative_to(unpacked).as_posix() for p in unpacked.rglob("*") if p.is_file()) == \
        [".complete", "vllm/config/cache.py"]
    assert fetch_engines.fetch() == [], "a release already unpacked is not fetched again"
