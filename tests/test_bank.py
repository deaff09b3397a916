"""The bank as a whole: every prompt has its notebook, ids are unique, fields are valid,
and a broken page fails with a message naming the file and the field."""

import re
from pathlib import Path

import pytest

from solutions.bank import BankError, load_bank

ROOT = Path(__file__).resolve().parents[1]

GOOD = """---
id: q01
title: A question
topic: roofline-capacity
tags: [mbu]
difficulty: medium
---
Body.
"""


def test_the_committed_bank_is_valid():
    questions = load_bank(ROOT)
    assert questions, "the bank has no questions"
    assert len({q.id for q in questions}) == len(questions)
    for q in questions:
        assert q.notebook_path.exists()


def _bank(tmp_path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def _error(tmp_path, files) -> str:
    with pytest.raises(BankError) as err:
        load_bank(_bank(tmp_path, files))
    return str(err.value)


NB = "notebooks/roofline-capacity/q01-a-question.ipynb"
MD = "questions/roofline-capacity/q01-a-question.md"


def test_a_good_question_loads(tmp_path):
    (q,) = load_bank(_bank(tmp_path, {MD: GOOD, NB: "{}"}))
    assert (q.id, q.topic, q.tags, q.grader) == ("q01", "roofline-capacity", ("mbu",), None)


@pytest.mark.parametrize("broken,expected", [
    (GOOD.replace("difficulty: medium\n", ""), "field 'difficulty' is missing"),
    (GOOD.replace("difficulty: medium", "difficulty: brutal"), "field 'difficulty' must be one of easy"),
    (GOOD.replace("id: q01", "id: 1"), "field 'id' must be a string of the form qNN"),
    (GOOD.replace("id: q01", "id: q02"), "field 'id' is 'q02' but the file name says q01"),
    (GOOD.replace("tags: [mbu]", "tags: []"), "field 'tags' must be a non-empty list"),
    (GOOD.replace("topic: roofline-capacity", "topic: decoding"), "field 'topic' is 'decoding' but the file lives"),
    (GOOD.replace("---\nid", "---\ngrader: nope\nid"), "field 'grader' must be one of block-allocator"),
    (GOOD.replace("title: A question", "title: [unclosed"), "front matter is not valid YAML (line"),
    (GOOD.replace("---\nBody", "Body"), "front matter is not closed"),
    ("Just a body\n", "no front matter"),
    (GOOD.replace("---\nid", "---\nauthor: me\nid"), "unknown field(s) author"),
])
def test_a_broken_page_names_its_file_and_field(tmp_path, broken, expected):
    message = _error(tmp_path, {MD: broken, NB: "{}"})
    assert MD in message and expected in message, message


def test_orphans_and_duplicates_are_reported_together(tmp_path):
    files = {MD: GOOD, NB: "{}",
             "questions/coding/q01-twin.md": GOOD.replace("roofline-capacity", "coding"),
             "notebooks/coding/q01-twin.ipynb": "{}",
             "notebooks/coding/q09-lonely.ipynb": "{}",
             "questions/coding/q02-no-answer.md": GOOD.replace("q01", "q02").replace("roofline-capacity", "coding")}
    message = _error(tmp_path, files)
    assert "field 'id' 'q01' is also used by" in message
    assert "notebooks/coding/q09-lonely.ipynb: notebook has no prompt" in message
    assert "questions/coding/q02-no-answer.md: no answer notebook" in message


def _notebooks():
    return sorted(ROOT.glob("notebooks/*/*.ipynb")) + sorted(ROOT.glob("docs/*.ipynb"))


@pytest.mark.parametrize("path", _notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_notebooks_are_committed_executed_and_without_timestamps(path):
    """The site renders committed outputs, so every code cell must have run; run timestamps
    would make each re-execution a noisy diff (scripts/execute_notebooks.py drops them)."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert code, f"{path.name} has no code"
    unexecuted = [i for i, c in enumerate(code) if c.execution_count is None]
    assert not unexecuted, f"{path.name}: code cells {unexecuted} were never executed; run scripts/execute_notebooks.py"
    stamped = [i for i, c in enumerate(nb.cells) if "execution" in c.metadata]
    assert not stamped, f"{path.name}: cells {stamped} carry execution timestamps; run scripts/execute_notebooks.py"
    last = code[-1].source
    assert "claim.check()" in last, f"{path.name}: the last code cell must state the claims and call claim.check()"


@pytest.mark.parametrize("path", sorted(Path(__file__).resolve().parents[1].glob("notebooks/*/q[0-9][0-9]-*.ipynb")),
                         ids=lambda p: p.name[:3])
def test_every_answer_has_a_rubric_the_mock_interview_reads(path):
    """The site reads the rubric from a Markdown cell (rendered outputs are not parsed): a `## Rubric`
    heading, its points as bullets, and one last bullet `- Common wrong turn: ...` kept apart."""
    import json
    from site_build.notebooks import rubric_items

    cells = json.loads(path.read_text())["cells"]
    texts = ["\n" + "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    found = [t.split("\n## Rubric", 1)[1] for t in texts if "\n## Rubric" in t]
    assert found, f"{path.name}: no Markdown cell holds a '## Rubric' heading"
    rubric = found[0].split("\n#", 1)[0]
    items = rubric_items([{"cell_type": "markdown", "source": rubric}])
    wrong = [i for i in items if i.startswith("Common wrong turn:")]
    assert len(wrong) == 1 and items[-1] == wrong[0], f"{path.name}: the last bullet must be the one wrong turn"
    assert 4 <= len(items) - 1 <= 8, f"{path.name}: {len(items) - 1} rubric points (4-8 expected)"


# A page that points at the steps of its proof ("satisfies step 1", "step 1 of the proof", "the proof
# never assumed ...") must still carry the proof: q05 once lost its proof cell in a rework while its
# follow-ups kept citing the steps.
_PROOF_REFERENCE = re.compile(r"\bstep \d+ of the proof\b|\b(?:satisfies|fails|gives) step \d+\b|\bthe proof (?:never|needs|does)\b",
                              re.I)


def _page_text(cells) -> str:
    """A notebook's Markdown cells and rendered Markdown outputs."""
    parts = []
    for c in cells:
        if c["cell_type"] == "markdown":
            parts.append("".join(c["source"]))
        for o in c.get("outputs", []):
            parts.append("".join(o.get("data", {}).get("text/markdown", "")))
    return "\n".join(parts)


@pytest.mark.parametrize("path", sorted(Path(__file__).resolve().parents[1].glob("notebooks/*/q[0-9][0-9]-*.ipynb")),
                         ids=lambda p: p.name[:3])
def test_a_page_that_cites_the_steps_of_its_proof_carries_the_proof(path):
    import json

    text = _page_text(json.loads(path.read_text())["cells"])
    cited = _PROOF_REFERENCE.findall(text)
    if not cited:
        return
    proof = re.search(r"\*\*Proof\.\*\*(.*?)∎", text, re.S)
    assert proof, f"{path.name} refers to its proof ({cited[0]!r}) but no '**Proof.** ... ∎' is on the page"
    steps = {int(n) for n in re.findall(r"^\s*(\d+)\. ", proof[1], re.M)}
    for n in map(int, re.findall(r"\bstep (\d+)\b", text, re.I)):
        assert n in steps, f"{path.name} cites step {n}, but the proof has steps {sorted(steps)}"
