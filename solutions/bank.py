"""The question bank on disk: prompts in questions/, answers in notebooks/, checked together.

A question is `questions/<topic>/qNN-<slug>.md` (YAML front matter + the prompt) and its
answer `notebooks/<topic>/qNN-<slug>.ipynb`. `load_bank` reads and validates all of them and
reports every problem at once, each naming the file and the field, so a broken page is a
one-line fix rather than a traceback hunt. The site build and the tests both use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

TOPICS = {
    "roofline-capacity": "Roofline and capacity",
    "kv-cache-memory": "KV cache and memory",
    "prefix-caching": "Prefix caching",
    "scheduling-latency": "Scheduling and latency",
    "decoding": "Decoding",
    "parallelism-kernels": "Parallelism and kernels",
    "engine-internals": "Engine internals",
    "tenancy-fleet": "Tenancy and fleet",
    "correctness-operations": "Correctness and operations",
    "coding": "Coding exercises",
}
DIFFICULTIES = ("easy", "medium", "hard")
GRADERS = ("block-allocator", "scheduler", "prefix-trie", "beam-fork", "hash-prefix-cache")
REQUIRED = ("id", "title", "topic", "tags", "difficulty")
ID_PATTERN = re.compile(r"q\d\d")
FILE_PATTERN = re.compile(r"(q\d\d)-[a-z0-9]+(?:-[a-z0-9]+)*")


class BankError(ValueError):
    """One or more question files are malformed; the message names each file and field."""


@dataclass(frozen=True)
class Question:
    id: str
    title: str
    topic: str
    tags: tuple[str, ...]
    difficulty: str
    grader: str | None
    prompt_path: Path
    notebook_path: Path
    body: str

    @property
    def slug(self) -> str:
        return self.prompt_path.stem


def split_front_matter(text: str, path: Path) -> tuple[dict, str]:
    """Return (front matter, body) of a Markdown file that starts with a `---` YAML block."""
    if not text.startswith("---\n"):
        raise BankError(f"{path}: no front matter: the file must start with a '---' line")
    end = text.find("\n---", 4)
    if end == -1:
        raise BankError(f"{path}: front matter is not closed by a '---' line")
    try:
        meta = yaml.safe_load(text[4:end])
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark else ""
        raise BankError(f"{path}: front matter is not valid YAML{where}: {getattr(err, 'problem', err)}") from None
    if not isinstance(meta, dict):
        raise BankError(f"{path}: front matter must be a mapping of fields, got {type(meta).__name__}")
    return meta, text[end + 4:].lstrip("\n")


def _id_rule(v, _topic_dir):
    if not (isinstance(v, str) and ID_PATTERN.fullmatch(v)):
        return "must be a string of the form qNN, e.g. q07"


def _title_rule(v, _topic_dir):
    if not (isinstance(v, str) and v.strip()):
        return "must be a non-empty string"


def _topic_rule(v, topic_dir):
    if v not in TOPICS:
        return f"must be one of {', '.join(TOPICS)}"
    if v != topic_dir:
        return f"is {v!r} but the file lives in {topic_dir}/"


def _tags_rule(v, _topic_dir):
    if not (isinstance(v, list) and v and all(isinstance(t, str) and t for t in v)):
        return "must be a non-empty list of strings"


def _difficulty_rule(v, _topic_dir):
    if v not in DIFFICULTIES:
        return f"must be one of {', '.join(DIFFICULTIES)}"


def _grader_rule(v, _topic_dir):
    if v not in GRADERS:
        return f"must be one of {', '.join(GRADERS)}"


FIELD_RULES = {"id": _id_rule, "title": _title_rule, "topic": _topic_rule, "tags": _tags_rule,
               "difficulty": _difficulty_rule, "grader": _grader_rule}


def _field_errors(meta: dict, path: Path) -> list[str]:
    errors = [f"{path}: field '{f}' is missing" for f in REQUIRED if f not in meta]
    topic_dir = path.parent.name
    stem = FILE_PATTERN.fullmatch(path.stem)
    if not stem:
        errors.append(f"{path}: file name must be qNN-<slug>.md (lowercase words joined by '-')")
    for field in (f for f in FIELD_RULES if f in meta):
        problem = FIELD_RULES[field](meta[field], topic_dir)
        if problem:
            errors.append(f"{path}: field '{field}' {problem}")
    if stem and meta.get("id") and stem.group(1) != meta["id"]:
        errors.append(f"{path}: field 'id' is {meta['id']!r} but the file name says {stem.group(1)}")
    unknown = set(meta) - set(REQUIRED) - {"grader"}
    if unknown:
        errors.append(f"{path}: unknown field(s) {', '.join(sorted(unknown))}")
    return errors


def load_bank(root: Path) -> list[Question]:
    """Read and validate every question under `root`; raise BankError listing all problems."""
    root = Path(root)
    errors: list[str] = []
    questions: list[Question] = []
    seen: dict[str, Path] = {}
    prompts = sorted((root / "questions").glob("*/*.md"))
    for path in prompts:
        rel = path.relative_to(root)
        try:
            meta, body = split_front_matter(path.read_text(encoding="utf-8"), rel)
        except BankError as err:
            errors.append(str(err))
            continue
        problems = _field_errors(meta, rel)
        notebook = root / "notebooks" / rel.parent.name / (path.stem + ".ipynb")
        if not notebook.exists():
            problems.append(f"{rel}: no answer notebook at {notebook.relative_to(root)}")
        if meta.get("id") in seen:
            problems.append(f"{rel}: field 'id' {meta['id']!r} is also used by {seen[meta['id']]}")
        errors += problems
        if problems:
            continue
        seen[meta["id"]] = rel
        questions.append(Question(
            id=meta["id"], title=meta["title"], topic=meta["topic"], tags=tuple(meta["tags"]),
            difficulty=meta["difficulty"], grader=meta.get("grader"), prompt_path=path,
            notebook_path=notebook, body=body))
    prompt_stems = {(p.parent.name, p.stem) for p in prompts}
    for notebook in sorted((root / "notebooks").glob("*/*.ipynb")):
        if (notebook.parent.name, notebook.stem) not in prompt_stems:
            errors.append(f"{notebook.relative_to(root)}: notebook has no prompt at "
                          f"questions/{notebook.parent.name}/{notebook.stem}.md")
    if errors:
        raise BankError("\n".join(errors))
    return sorted(questions, key=lambda q: q.id)
