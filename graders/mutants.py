"""The mutant catalogue: realistic bugs stored as small unified diffs against a reference.

Each ``graders/exercises/<x>/mutants/<name>.diff`` starts with a header of ``Field: value``
lines (a value may continue on lines indented by two spaces), then a blank line, then a
unified diff of the exercise's reference. The header says which property must catch the bug
and what history backs it, as exactly one of four labels:

  shipped          the bug was in a released engine and ``Link`` is the fix (PR or commit) read
  reported         ``Link`` is an issue (read) that reports this bug
  same symptom as  ``Link`` (read) shows the same symptom from a related cause
  plausible        no link: a bug written from the spec

The patch applier is pure Python and strict (every context and removed line must match), so
a reference edit that a mutant no longer fits fails loudly instead of grading the wrong code.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

LABELS = ("shipped", "reported", "same symptom as", "plausible")
FIELDS = ("Property", "Label", "Link", "Summary", "Story")
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(ValueError):
    """A diff that does not apply to the text it names."""


@dataclass(frozen=True)
class Mutant:
    name: str
    property: str     # the property that must catch it
    label: str        # one of LABELS
    link: str         # the PR, commit or issue behind the label ("" for plausible)
    summary: str      # one line: the bug
    story: str        # why it is realistic, in a few sentences
    diff: str         # unified diff against the reference
    reference: Path

    def source(self) -> str:
        """The runnable mutant: the reference with the diff applied."""
        return apply(self.reference.read_text(), self.diff)

    def changed_lines(self) -> int:
        return sum(1 for l in self.diff.splitlines()
                   if l[:1] in "+-" and not l.startswith(("+++", "---")))


def parse(path: Path, reference: Path) -> Mutant:
    """Read one .diff file: header fields, a blank line, the diff."""
    text = path.read_text(encoding="utf-8")
    head, sep, diff = text.partition("\n\n")
    if not sep or not diff.startswith("--- "):
        raise ValueError(f"{path}: expected header fields, a blank line, then a unified diff")
    fields: dict[str, str] = {}
    key = None
    for line in head.splitlines():
        if line.startswith("  ") and key:
            fields[key] += " " + line.strip()
            continue
        key, colon, value = line.partition(":")
        if not colon or key not in FIELDS or key in fields:
            raise ValueError(f"{path}: bad header line {line!r} (fields: {', '.join(FIELDS)})")
        fields[key] = value.strip()
    missing = [f for f in FIELDS if f not in fields and f != "Link"]
    if missing:
        raise ValueError(f"{path}: header lacks {', '.join(missing)}")
    label, link = fields["Label"], fields.get("Link", "")
    if label not in LABELS:
        raise ValueError(f"{path}: Label must be one of {LABELS}, not {label!r}")
    if (label == "plausible") != (not link):
        need = "has no" if label == "plausible" else "needs a"
        raise ValueError(f"{path}: a {label!r} mutant {need} Link")
    return Mutant(path.stem, fields["Property"], label, link, fields["Summary"],
                  fields["Story"], diff, reference)


def catalogue(exercise) -> list[Mutant]:
    """Every mutant of an exercise, by name."""
    return [parse(p, exercise.reference)
            for p in sorted((exercise.home / "mutants").glob("*.diff"))]


def find(exercise, name: str) -> Mutant:
    for m in catalogue(exercise):
        if m.name == name:
            return m
    known = ", ".join(m.name for m in catalogue(exercise))
    raise KeyError(f"{exercise.name} has no mutant {name!r}; known: {known}")


def make_diff(original: str, changed: str, path: str) -> str:
    """A unified diff (3 lines of context) from `original` to `changed`."""
    lines = difflib.unified_diff(original.splitlines(keepends=True),
                                 changed.splitlines(keepends=True),
                                 f"a/{path}", f"b/{path}")
    return "".join(l if l.endswith("\n") else l + "\n" for l in lines)


def apply(original: str, diff: str) -> str:
    """Apply a unified diff strictly: each hunk at its stated line, every line matching."""
    source = original.splitlines(keepends=True)
    out: list[str] = []
    at = 0   # lines of `source` consumed
    lines = diff.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        match = HUNK.match(lines[i])
        i += 1
        if not match:
            continue  # ---/+++ headers
        start = int(match.group(1)) - (0 if match.group(2) == "0" else 1)
        if start < at:
            raise PatchError(f"hunk at line {start + 1} overlaps the one before")
        out += source[at:start]
        at = start
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            i += 1
            tag, body = line[:1], line[1:]
            if tag == "\\":
                continue  # "\ No newline at end of file"
            if tag in (" ", "-"):
                if at >= len(source) or source[at].rstrip("\n") != body.rstrip("\n"):
                    got = source[at].rstrip("\n") if at < len(source) else "<end of file>"
                    raise PatchError(f"line {at + 1}: expected {body.rstrip()!r}, found {got!r}")
                if tag == " ":
                    out.append(source[at])
                at += 1
            elif tag == "+":
                out.append(body)
            else:
                raise PatchError(f"unexpected diff line {line!r}")
    return "".join(out + source[at:])
