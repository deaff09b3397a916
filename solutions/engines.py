"""The engine releases the bank speaks of, and the citations that pin its engine facts to them.

Every engine fact in the bank is read in one release: vLLM 0.33.0 and SGLang 0.5.23 (their PyPI
wheels hold the Python source), and nano-vllm at one commit (it is not on PyPI). A fact that held
only in an older release is history and cites that release; at most two such releases per engine
across the whole bank (`HISTORICAL`).

A citation is a code span holding ``<dist>==<version>:<path inside the wheel>`` followed (after
at most ``: ``, ``, `` or white space with one line break at most, as a wrapped paragraph,
docstring or ``#`` comment has it) by a code span with the fragment the fact rests on, at least four characters,
which must occur in that file (whitespace runs compared as one space)::

    `vllm==0.33.0:vllm/config/scheduler.py` `long_prefill_token_threshold: int = Field(default=0, ge=0)`

nano-vllm, having no release, is cited at its commit: ``nano-vllm@<40-hex commit>:<path>``.

`find_citations` parses them out of Markdown (or any text), `snapshots` finds every engine
snapshot a text refers to, in this format or the older ones (``vllm-project/vllm@<sha>:<path>``,
``vllm@<sha>``, blob URLs at a commit, ``sglang@...``), and `source_url` links a citation to the
file at its release tag on GitHub. `scripts/fetch_engines.py` fetches the releases into
`.cache/engines/`, and `tests/test_engine_citations.py` verifies every citation against them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PINNED = {"vllm": "0.33.0", "sglang": "0.5.23"}
# Older releases a fact may cite as history (and must say so in words); at most two per engine.
# vLLM 0.6.3: V0 (block managers v1 and v2, the swapped queue, Medusa); SGLang 0.4.3.post2: the
# last release whose scheduler ran jump-forward decoding.
HISTORICAL: dict[str, tuple[str, ...]] = {"vllm": ("0.6.3",), "sglang": ("0.4.3.post2",)}
NANO_VLLM = "bb823b3e06983d71485a8e1f23715ebd87d98ef8"   # GeeeekExplorer/nano-vllm main, 2026-04-26
ENGINES = ("vllm", "sglang", "nano-vllm")

# The wheel each release is read from: its file name and sha256, so that every contributor and CI
# read the same bytes whatever their own Python or platform.
WHEELS = {
    ("vllm", "0.33.0"): ("vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl",
                         "4b6bdec4ab269990bf70d45a3c1e94c3760a27064513760193b26d6f0da883aa"),
    ("sglang", "0.5.23"): ("sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl",
                           "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937"),
    ("vllm", "0.6.3"): ("vllm-0.6.3-cp38-abi3-manylinux1_x86_64.whl",
                        "939ae90251a5676b83d0c2afb92405e4e53bfb4b79a3920c80e5b57fbe9c5ff7"),
    ("sglang", "0.4.3.post2"): ("sglang-0.4.3.post2-py3-none-any.whl",
                                "8264f0ca1c28bc1e254fd555cfede5a37360f3bf490b3cf663335bfb65c7edd4"),
}
REPOS = {"vllm": "vllm-project/vllm", "sglang": "sgl-project/sglang",
         "nano-vllm": "GeeeekExplorer/nano-vllm"}
# Where a wheel's top-level package sits in its repository (SGLang keeps it under python/).
REPO_PREFIX = {"vllm": "", "sglang": "python/", "nano-vllm": ""}


def releases() -> list[tuple[str, str]]:
    """Every (dist, version) the bank may cite from a wheel: the pins, then the history."""
    return [(d, v) for d, v in PINNED.items()] + [(d, v) for d in HISTORICAL for v in HISTORICAL[d]]


class CitationError(ValueError):
    """A malformed citation; the message names the line and says what is wrong."""


@dataclass(frozen=True)
class Citation:
    dist: str        # "vllm", "sglang" or "nano-vllm"
    version: str     # a release ("0.33.0"), or nano-vllm's commit
    path: str        # inside the wheel (nano-vllm: inside the repository)
    fragment: str    # what the fact rests on, as quoted
    line: int        # 1-based line of the text the citation starts on

    def __str__(self) -> str:
        sep = "@" if self.dist == "nano-vllm" else "=="
        return f"{self.dist}{sep}{self.version}:{self.path}"


# A code span: a run of backticks, content, the same run (CommonMark, without the edge cases).
_SPAN = r"(?P<{tick}>`+)(?P<{body}>.+?)(?<!`)(?P={tick})(?!`)"
_HEAD_SPAN = re.compile(_SPAN.format(tick="t1", body="head"), re.S)
# Between the two spans: nothing but ": ", ", " or white space (one line break at most, as a
# Markdown paragraph or a wrapped docstring has it; after it, a wrapped comment's "#").
_FRAGMENT_AFTER = re.compile(r"(?:[:,]?[ \t]*(?:\n[ \t]*#?[ \t]*)?)" + _SPAN.format(tick="t2", body="frag"),
                             re.S)
# What a citation's head looks like, loosely (to report a malformed one) and exactly.
_LOOKS_LIKE_HEAD = re.compile(r"^(?:vllm|sglang|nano-vllm)\s*(?:==|=|@)\s*\S*:\S+$")
_HEAD = re.compile(r"^(?P<dist>vllm|sglang)==(?P<version>\d+(?:\.\d+)+(?:\.post\d+|rc\d+)?)"
                   r":(?P<path>[\w.-]+(?:/[\w.-]+)*)$"
                   r"|^(?P<ndist>nano-vllm)@(?P<commit>[0-9a-f]{40}):(?P<npath>[\w.-]+(?:/[\w.-]+)*)$")


MIN_FRAGMENT = 4   # a fragment names an identifier, a default or a message, not a bracket


def _strip(body: str) -> str:
    body = body.replace("\n", " ")
    if len(body) > 2 and body[0] == " " and body[-1] == " " and body.strip():
        body = body[1:-1]
    return body


def _check_path(dist: str, path: str) -> str | None:
    if ".." in path.split("/"):
        return "the path climbs out of the release ('..')"
    if dist == "vllm" and not path.startswith("vllm/"):
        return "a path in the vllm wheel starts with 'vllm/'"
    if dist == "sglang" and not path.startswith("sglang/"):
        return "a path in the sglang wheel starts with 'sglang/' (not 'python/sglang/')"
    return None


def scan_citations(text: str) -> tuple[list[Citation], list[CitationError]]:
    """Every citation in `text`, in order, and every malformed one (a head without a fragment, a
    bad version or path), each error naming its line."""
    found, errors = [], []
    pos = 0
    while (span := _HEAD_SPAN.search(text, pos)) is not None:
        head = _strip(span["head"]).strip()
        pos = span.end()
        if not _LOOKS_LIKE_HEAD.match(head):
            continue
        line = text.count("\n", 0, span.start()) + 1
        try:
            citation, pos = _citation_at(text, head, line, pos)
        except CitationError as error:
            errors.append(error)
            continue
        found.append(citation)
    return found, errors


def find_citations(text: str) -> list[Citation]:
    """Every citation in `text`, in order. Raises CitationError naming the line of the first
    malformed one."""
    found, errors = scan_citations(text)
    if errors:
        raise errors[0]
    return found


def _citation_at(text: str, head: str, line: int, pos: int) -> tuple[Citation, int]:
    """The citation whose head span ends at `pos`, and where its fragment span ends."""
    exact = _HEAD.match(head)
    if exact is None:
        raise CitationError(f"line {line}: `{head}` is not <dist>==<version>:<path> "
                            "(vllm or sglang, e.g. `vllm==0.33.0:vllm/config/vllm.py`) "
                            "nor nano-vllm@<40-hex commit>:<path>")
    dist = exact["dist"] or exact["ndist"]
    version = exact["version"] or exact["commit"]
    path = exact["path"] or exact["npath"]
    if (problem := _check_path(dist, path)) is not None:
        raise CitationError(f"line {line}: `{head}`: {problem}")
    frag = _FRAGMENT_AFTER.match(text, pos)
    if frag is None or not _strip(frag["frag"]).strip():
        raise CitationError(f"line {line}: `{head}` is not followed by a code span with the "
                            "fragment it rests on (after at most ': ', ', ' or a space)")
    fragment = _strip(frag["frag"])
    if len(normalise(fragment)) < MIN_FRAGMENT:
        raise CitationError(f"line {line}: `{head}` rests on `{fragment}`: a fragment names "
                            f"something (at least {MIN_FRAGMENT} characters)")
    if _LOOKS_LIKE_HEAD.match(fragment.strip()):
        raise CitationError(f"line {line}: `{head}` is followed by another citation, "
                            "not by the fragment it rests on")
    return Citation(dist, version, path, fragment, line), frag.end()


def normalise(text: str) -> str:
    """Whitespace runs as one space: how a fragment is compared with its file."""
    return " ".join(text.split())


def release_dir(root: Path, dist: str, version: str) -> Path:
    """Where `scripts/fetch_engines.py` unpacks a release under `root` (`.cache/engines/`)."""
    return Path(root) / f"{dist}-{version}"


def check(citation: Citation, root: Path) -> str | None:
    """None if the cited file is in its release (unpacked under `root`) and holds the fragment;
    else what is wrong, naming the file and the fragment."""
    base = release_dir(root, citation.dist, citation.version)
    if not base.is_dir():
        return f"{citation}: release {citation.dist} {citation.version} is not fetched ({base})"
    target = base / citation.path
    if not target.is_file():
        return f"{citation}: no such file in {citation.dist} {citation.version}"
    body = normalise(target.read_text(encoding="utf-8", errors="replace"))
    if not _holds(body, normalise(citation.fragment)):
        return f"{citation}: fragment `{citation.fragment}` is not in the file"
    return None


def _holds(body: str, fragment: str) -> bool:
    """The fragment occurs in the body as whole tokens at its ends: `default=0.9` is not in
    `default=0.92`, nor `max_num_seqs` in `max_num_seqs_per_step`."""
    start = r"(?<![\w.])" if fragment[:1].isalnum() or fragment[:1] == "_" else ""
    end = r"(?![\w])" if fragment[-1:].isalnum() or fragment[-1:] == "_" else ""
    return re.search(start + re.escape(fragment) + end, body) is not None


def source_url(citation: Citation) -> str:
    """The cited file on GitHub at its release tag (nano-vllm: at its commit)."""
    repo = REPOS[citation.dist]
    ref = citation.version if citation.dist == "nano-vllm" else f"v{citation.version}"
    return f"https://github.com/{repo}/blob/{ref}/{REPO_PREFIX[citation.dist]}{citation.path}"


# Snapshots, in every form the bank has used. A snapshot is (engine, ref): a release version,
# a commit (full or abbreviated) or a branch name. A link to a PR, an issue or a commit's diff
# (`/pull/`, `/issues/`, `/commit/`) cites a change that was read, not a snapshot.
_SHA = r"[0-9a-f]{7,40}"
_SNAPSHOT_FORMS = (
    ("vllm", re.compile(r"(?<![\w-])vllm==(\d+(?:\.\d+)+(?:\.post\d+|rc\d+)?):")),
    ("sglang", re.compile(r"(?<![\w-])sglang==(\d+(?:\.\d+)+(?:\.post\d+|rc\d+)?):")),
    ("nano-vllm", re.compile(r"(?<![\w-])nano-vllm@(" + _SHA + r")\b")),
    ("vllm", re.compile(r"(?<![\w-])vllm@(" + _SHA + r")\b")),            # vllm-project/vllm@ too
    ("sglang", re.compile(r"(?<![\w-])sglang@(" + _SHA + r"|v?\d+(?:\.\d+)+)\b")),
    ("vllm", re.compile(r"github\.com/vllm-project/vllm/(?:blob|tree|raw)/([^/\s)\]`'\"]+)")),
    ("sglang", re.compile(r"github\.com/sgl-project/sglang/(?:blob|tree|raw)/([^/\s)\]`'\"]+)")),
    ("nano-vllm", re.compile(r"github\.com/GeeeekExplorer/nano-vllm/(?:blob|tree|raw)/"
                             r"([^/\s)\]`'\"]+)")),
    ("vllm", re.compile(r"raw\.githubusercontent\.com/vllm-project/vllm/([^/\s)\]`'\"]+)")),
    ("sglang", re.compile(r"raw\.githubusercontent\.com/sgl-project/sglang/([^/\s)\]`'\"]+)")),
)


@dataclass(frozen=True)
class Snapshot:
    engine: str
    ref: str         # "0.33.0", a commit, or a branch
    line: int
    text: str        # what was matched, for the report
    cited: bool      # in the citation format (a dist==version or nano-vllm@<commit> head)


def snapshots(text: str) -> list[Snapshot]:
    """Every engine snapshot `text` refers to, in any of the forms the bank has used. A tag
    `v0.33.0` in a URL is the release 0.33.0."""
    found = []
    for engine, pattern in _SNAPSHOT_FORMS:
        for m in pattern.finditer(text):
            ref = m[1]
            if re.fullmatch(r"v\d+(?:\.\d+)+(?:\.post\d+|rc\d+)?", ref):
                ref = ref[1:]
            cited = "==" in m[0] or (m[0].startswith("nano-vllm@") and text[m.start() - 1:m.start()] == "`"
                                     and len(ref) == 40 and text[m.end():m.end() + 1] == ":")
            found.append(Snapshot(engine, ref, text.count("\n", 0, m.start()) + 1, m[0], cited))
    return found


def distinct_refs(refs) -> set[str]:
    """The distinct snapshots among `refs`: an abbreviated commit is the full one it starts."""
    refs = set(refs)
    return {r for r in refs if not any(o != r and o.startswith(r) for o in refs)}


def allowed(engine: str) -> set[str]:
    """The snapshots the bank may cite: the pinned release and the labelled historical ones."""
    if engine == "nano-vllm":
        return {NANO_VLLM}
    return {PINNED[engine], *HISTORICAL[engine]}


def is_allowed(engine: str, ref: str) -> bool:
    """Whether `ref` is one the bank may cite (an abbreviated commit of the pinned one counts)."""
    if re.fullmatch(_SHA, ref):
        return any(a.startswith(ref) for a in allowed(engine))
    return ref in allowed(engine)
