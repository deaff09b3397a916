"""A graded question's page parts: the exact grader commands, and the exercise itself: the
starter file in an editor (download it, grade it with the CLI, or Check it in the browser), the
reference solution and the catalogue of realistic bugs the grader catches, each as its diff."""

from __future__ import annotations

import html
import re

from solutions.bank import Question

from .chips import excluded
from .layout import ROOT
from .notebooks import site_markdown

EXERCISE_MARK = "<!-- exercise -->"
CHECK_LIMIT_S = 180  # the in-browser Check's time limit: the worker is terminated after it


def grader_file(q: Question) -> str:
    """The file name the prompt itself uses with `grader init`, so the page names one file."""
    said = re.search(rf"grader init {re.escape(q.grader)} (\S+\.py)", q.body)
    return said.group(1) if said else q.grader.replace("-", "_") + ".py"


def grader_section(q: Question) -> str:
    path = grader_file(q)
    return ("\n\n## Grade your implementation\n\n"
            f"This is a coding exercise with a grader. Write a starter file, implement it, then let "
            f"the grader's property tests judge it (exit status 0 means every property held):\n\n"
            f"```bash\ngrader init {q.grader} {path}\ngrader check {q.grader} {path}\n```\n\n"
            f"`grader show {q.grader}` prints the task and the interface; `--json report.json` "
            f"writes a machine-readable report. Or start below, in the browser, from the same "
            f"starter file, and download it when you want to grade it.\n\n{EXERCISE_MARK}\n")


def exercise_html(q: Question, config, browser_grader: bool) -> str:
    """The starter file in an editor (download it, grade it with the CLI), the reference
    solution and the catalogue of realistic bugs the grader catches, each as its diff: folded."""
    from graders import mutants, registry

    ex = registry.get(q.grader)
    md = site_markdown(config, "exercise-")
    filename = grader_file(q)
    starter = ex.starter.read_text(encoding="utf-8")
    reference = ex.reference.read_text(encoding="utf-8")

    def code(text, lang="python"):
        md.reset()
        fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
        return md.convert(f"{fence}{lang}\n{text}\n{fence}")

    bugs = []
    for m in mutants.catalogue(ex):
        history = m.label + (f" ({m.link})" if m.link else "") + f": {m.story}"
        diff = "\n".join(line for line in m.diff.splitlines() if not line.startswith(("---", "+++")))
        bugs.append(f'<li><p><strong>{html.escape(m.summary)}</strong> fails '
                    f'<code>{html.escape(m.property)}</code>. {html.escape(history)}</p>'
                    + code(diff, "diff") + "</li>")
    rows = max(12, min(40, starter.count("\n") + 2))
    return excluded(
        f'<div class="qb-exercise" data-filename="{html.escape(filename)}">'
        f'<p><label for="qb-editor-{q.id}"><strong>Your {html.escape(filename)}</strong> '
        f"(the starter file of <code>grader init {q.grader}</code>)</label></p>"
        f'<textarea id="qb-editor-{q.id}" class="qb-editor" rows="{rows}" spellcheck="false" '
        f'autocapitalize="off" autocomplete="off" wrap="off">'
        f"{html.escape(starter)}</textarea>"
        f'<p class="qb-editor__hint" id="qb-editor-hint-{q.id}"><kbd>Tab</kbd> indents; to leave '
        "the editor by keyboard, press <kbd>Esc</kbd> then <kbd>Tab</kbd>. Your draft is kept in "
        "this browser.</p>"
        '<p class="qb-exercise__actions"><button type="button" class="md-button" data-exercise="download">'
        f"Download {html.escape(filename)}</button> "
        '<button type="button" class="md-button" data-exercise="reset">Back to the starter</button> '
        + ('<button type="button" class="md-button md-button--primary" data-exercise="check" '
           f'data-grader="{q.grader}" data-limit="{CHECK_LIMIT_S}">Check in the browser</button> ' if browser_grader else "")
        + '<span class="qb-exercise__saved" aria-live="polite"></span></p>'
        + ('<p class="qb-exercise__note">Check runs what <code>grader check</code> runs (the same '
           "properties, hypothesis version and seed, so the same report and repro; only numbers "
           "from Python's built-in <code>hash()</code> differ, as the browser's Python is 32-bit), "
           "in Python compiled to WebAssembly (Pyodide, served by this site) inside a Web Worker "
           f"that is stopped after {CHECK_LIMIT_S} s. The first check loads about 13 MB.</p>"
           '<pre class="qb-out qb-exercise__report" tabindex="0" aria-live="polite" hidden></pre>'
           if browser_grader else "")
        +
        '<details class="qb-reference"><summary>Reference solution (a spoiler: try first)</summary>'
        f"<p><code>{ex.reference.relative_to(ROOT).as_posix()}</code>, which the grader passes.</p>"
        f"{code(reference)}</details>"
        f'<details class="qb-bugs"><summary>The {len(bugs)} bugs the grader catches, each as its '
        "diff from the reference</summary><p>Each is a realistic mistake, most from a real "
        "engine's history; the grader fails each on the property named.</p>"
        f'<ol class="qb-bug-list">{"".join(bugs)}</ol></details></div>')
