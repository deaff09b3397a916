"""Every figure in an answer's prose comes from code or is quoted with its source (tests/prose_figures.py).

The notebooks still hold some hand-typed figures from before the rule was checked; they are listed
in tests/prose_figures_baseline.json, which may only shrink: a new hand-typed figure fails here, and
so does a baseline entry that is gone (run `python -m tests.prose_figures --update` to take it out).
"""

import json

import pytest

from tests import prose_figures as pf


def _nb(markdown: str, code: str = "", output: str = "") -> dict:
    return {"cells": [{"cell_type": "markdown", "source": [markdown]},
                      {"cell_type": "code", "source": [code],
                       "outputs": [{"output_type": "stream", "name": "stdout", "text": [output]}]}]}


@pytest.fixture
def notebook(tmp_path):
    def write(*args):
        path = tmp_path / "q99-x.ipynb"
        path.write_text(json.dumps(_nb(*args)))
        return path
    return write


def test_a_typed_figure_is_found(notebook):
    found = pf.findings(notebook("The step takes 37.5 ms at batch 221.", "t = step()", "t = 21.9 ms"))
    assert [f.split(" in ")[0] for f in found] == ["37.5", "221"]
    assert "«The step takes 37.5 ms at batch 221.»" in found[0]


def test_a_figure_the_code_prints_or_holds_is_not(notebook):
    assert pf.findings(notebook("The step takes 21.9 ms for 2,048 tokens, 37% of it attention.",
                                "context = 2048", "t = 21.93 ms, attention share 0.371")) == []


def test_names_counts_citations_and_sourced_paragraphs_are_not_figures(notebook):
    text = ("Llama 3.1 70B on 8 H100s, vLLM 0.33.0, since 2024 (`max_num_seqs=256`).\n\n"
            "The paper's Table 3 gives 27.4 ms (https://arxiv.org/abs/2401.00001).")
    assert pf.findings(notebook(text)) == []


def test_no_new_hand_typed_figures_and_the_baseline_only_shrinks():
    baseline = json.loads(pf.BASELINE.read_text())
    now = pf.scan()
    new = {nb: sorted(set(f) - set(baseline.get(nb, []))) for nb, f in now.items()}
    new = {nb: f for nb, f in new.items() if f}
    gone = {nb: sorted(set(f) - set(now.get(nb, []))) for nb, f in baseline.items()}
    gone = {nb: f for nb, f in gone.items() if f}
    assert not new, ("hand-typed figures (render them from code, or quote their source in the same "
                     f"paragraph): {json.dumps(new, indent=1, ensure_ascii=False)}")
    assert not gone, ("fixed figures still in tests/prose_figures_baseline.json: run "
                      f"`python -m tests.prose_figures --update`: {json.dumps(gone, indent=1, ensure_ascii=False)}")
