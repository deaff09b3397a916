"""Hand-typed figures: numbers in an answer's Markdown prose that no code in the notebook produces.

The bank's rule is that every figure in the prose is rendered from computed values (an f-string
shown as Markdown, a print, a claim) or quoted with its source. Typed figures drift: the review
found "1.8x" in a paragraph whose claim computed 3.19x. This scanner reads each notebook's
Markdown cells and reports every figure that neither appears, at the precision it is written, among
the numbers the notebook's code and outputs contain, nor stands in a paragraph that quotes a source
(a link, an engine citation, a paper, a table, a datasheet).

It is a detector with known blind spots, not a proof: a typed figure that happens to equal some
number the code prints passes. `python -m tests.prose_figures` lists the findings;
`--update` rewrites the baseline of known findings that the test tolerates (it may only shrink).
"""

from __future__ import annotations

import bisect
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BASELINE = pathlib.Path(__file__).with_name("prose_figures_baseline.json")

# Regions of Markdown that hold no prose figure: code spans, fenced code, link targets, headings,
# engine citations, versions, model and GPU names (the digits there are names, not figures).
STRIP = [
    re.compile(r"```.*?```", re.S),
    re.compile(r"`[^`\n]*`"),
    re.compile(r"\]\([^)]*\)"),
    re.compile(r"https?://\S+"),
    re.compile(r"^#+ .*$", re.M),
    re.compile(r"\b\d+\.\d+\.\d+\b"),
    re.compile(r"\b(?:Llama|Qwen|Mistral|Mixtral|Gemma|DeepSeek|Nemotron|GPT|Phi|CodeLlama|InternLM|Yi|OPT)"
               r"[- ]?(?:\d+(?:\.\d+)?(?:[- ]\d+(?:\.\d+)?)?)?(?:[- ]?\d+x\d+B|[- ]?\d+(?:\.\d+)?[BbMm])?", re.I),
    re.compile(r"\b(?:19|20)\d\d\b"),  # years
    re.compile(r"\b(?:PR|issue|#)\s?\d+", re.I),
    re.compile(r"\b(?:Table|Figure|Fig\.|Section|§|Eq\.|equation)\s?\d+(?:\.\d+)?", re.I),
]
# A paragraph that quotes its source may carry figures the code does not produce.
SOURCED = re.compile(r"\]\(http|https?://|==\d|@[0-9a-f]{7}|\barXiv\b|\bpaper\b|\bTable\b|datasheet|"
                     r"\bpublished\b|\breports?\b|\bmeasured (?:by|in|on)\b|\(source|\bSource:", re.I)
FIGURE = re.compile(r"(?<![\w.,/^_])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:\s?([KM])(?![a-zA-Z]))?(?![\w]|\.\d)")
SMALL = 16  # whole numbers up to this are counts (GPUs, heads, steps), not figures


CODE_NUMBER = re.compile(r"(?<![\w.])(\d[\d_]*(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)")


def _numbers_in_code(src: str) -> set[float]:
    """The number literals of a code cell (a regex, not tokenize: ten times faster, and a digit
    inside a string or a name counts too, which only makes the check more lenient)."""
    return {float(m[1].replace("_", "")) for m in CODE_NUMBER.finditer(src)}


def _numbers_in_text(text: str) -> set[float]:
    found = set()
    for m in re.finditer(r"(?<![\w.])-?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:[eE]([-+]?\d+))?(\s?[KM](?![a-zA-Z]))?", text):
        v = float(m[1].replace(",", "") + (f".{m[2]}" if m[2] else "") + (f"e{m[3]}" if m[3] else ""))
        found.add(v)
        if m[4]:
            found.add(v * (1e3 if m[4].strip() == "K" else 1e6))
    return found


def produced(cells) -> set[float]:
    """Every number the notebook's code contains or its outputs show."""
    out = set()
    for c in cells:
        if c["cell_type"] != "code":
            continue
        out |= _numbers_in_code("".join(c["source"]))
        for o in c.get("outputs", []):
            texts = [o.get("text", "")] + [v for k, v in o.get("data", {}).items() if k.startswith("text/")]
            for t in texts:
                out |= _numbers_in_text("".join(t) if isinstance(t, list) else t)
    return out


def _matches(value: float, decimals: int, digits: str, have: set[float], sorted_have: list[float]) -> bool:
    if decimals:
        tol = 0.5 * 10 ** -decimals
    else:
        zeros = len(digits) - len(digits.rstrip("0"))
        tol = 0.5 * 10 ** zeros if value >= 100 and zeros else 0.5
    tol *= 1 + 1e-9
    for target in (value, value / 100, value * 1e3, value / 1e3):  # as typed, a percent, K/M shown spelled out
        t_tol = tol * target / value if value else tol
        i = bisect.bisect_left(sorted_have, target - t_tol)
        if i < len(sorted_have) and sorted_have[i] <= target + t_tol:
            return True
    return False


def findings(path: pathlib.Path) -> list[str]:
    """The hand-typed figures of one notebook, as 'figure in «context»' strings (stable order)."""
    cells = json.loads(path.read_text())["cells"]
    have = produced(cells)
    sorted_have = sorted(have)
    found = []
    for c in cells:
        if c["cell_type"] != "markdown":
            continue
        text = "".join(c["source"])
        for pattern in STRIP:
            text = pattern.sub(" ", text)
        for para in re.split(r"\n\s*\n|\n(?=\s*[-*] )", text):
            if SOURCED.search(para):
                continue
            for m in FIGURE.finditer(para):
                digits = m[1].replace(",", "")
                value = float(digits + (f".{m[2]}" if m[2] else ""))
                if m[3]:
                    value *= 1e3 if m[3] == "K" else 1e6
                if not m[2] and not m[3] and value <= SMALL:
                    continue
                if _matches(value, len(m[2] or ""), digits, have, sorted_have):
                    continue
                start = max(0, m.start() - 30)
                context = " ".join(para[start:m.end() + 20].split())
                found.append(f"{m.group(0).strip()} in «{context}»")
    return found


def notebooks() -> list[pathlib.Path]:
    return sorted((ROOT / "notebooks").rglob("q[0-9][0-9]-*.ipynb"))


def scan() -> dict[str, list[str]]:
    return {str(p.relative_to(ROOT)): f for p in notebooks() if (f := findings(p))}


if __name__ == "__main__":
    result = scan()
    total = sum(map(len, result.values()))
    if "--update" in sys.argv:
        BASELINE.write_text(json.dumps(result, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
        print(f"baseline: {total} figures in {len(result)} notebooks")
    else:
        for nb, items in result.items():
            print(f"{nb}: {len(items)}")
            for item in items:
                print(f"    {item}")
        print(f"{total} hand-typed figures in {len(result)} notebooks")
