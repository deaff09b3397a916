"""The in-browser grader, checked in headless Chromium against the built site: for each graded
question, Check passes the reference and fails a catalogued mutant on its property, printing the
report `grader check` prints, within its CPU budget. Its own file so that pytest-xdist runs it
beside the rest of the site's browser tests (it builds the site once more, in parallel).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from test_site import (BROWSER_GRADER, Reader, _missing, bank, build, chromium,  # noqa: F401 (fixtures)
                       page_of, report_table, server, site)

CHECK_SECONDS = 30  # the budget for one Check, first boot of Python included


def _browser_cpu_seconds() -> float:
    """CPU seconds used so far by this test's descendants (Playwright's driver and Chromium's
    processes, the Web Worker's thread among them): a Check is budgeted in CPU time, which a
    busy machine does not inflate, so load cannot fail it (its wall time is printed)."""
    parents, cpu = {}, {}
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited while we looked
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        cpu[pid] = (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
    mine, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - mine
        mine |= frontier
    return sum(cpu[pid] for pid in mine)


def _builtin_hashes_masked(report_text: str) -> str:
    """A report with values of Python's built-in hash() masked: a tuple's hash is 64-bit in the
    CLI and 32-bit in Pyodide (wasm32), and q47's spec keys blocks with it."""
    return re.sub(r"\b\d{9,}\b", "<hash>", report_text)


def test_the_browser_grader_prints_what_the_cli_prints(chromium, server, build, bank):
    """Check, in the page, for each graded question: the reference passes and a catalogued
    mutant fails on the property it must fail, and each report (verdict, reasons, repro) is
    the one `grader check` prints for the same file, within CHECK_SECONDS. Pyodide boots once
    per page, inside the first check."""
    if BROWSER_GRADER["problem"]:
        _missing(f"the in-browser grader could not be fetched: {BROWSER_GRADER['problem']}")
    from graders import mutants, registry, report, runner

    graded = [q for q in bank if q.grader]
    if not graded:
        pytest.skip("no graded question yet")
    timings = []
    for q in graded:
        ex = registry.get(q.grader)
        reader = Reader(chromium, server)
        reader.context.set_default_timeout(300_000)
        reader.open(page_of(q).removesuffix("index.html"))
        filename = reader.page.get_attribute(".qb-exercise", "data-filename")
        out = reader.page.locator(".qb-exercise__report")
        mutant = mutants.catalogue(ex)[0]
        for name, source in (("reference", ex.reference.read_text(encoding="utf-8")), (mutant.name, mutant.source())):
            reader.page.locator("textarea.qb-editor").evaluate(  # the file the editor holds
                "(el, text) => { el.value = text; el.dispatchEvent(new Event('input')); }", source)
            reader.page.evaluate("() => { delete document.querySelector('.qb-exercise__report').dataset.exit; }")
            cpu = _browser_cpu_seconds()
            reader.page.click('[data-exercise="check"]')
            reader.page.wait_for_function(
                "() => document.querySelector('.qb-exercise__report').dataset.exit !== undefined")
            cpu = _browser_cpu_seconds() - cpu
            text, exit_status = out.inner_text(), out.get_attribute("data-exit")
            seconds = float(out.get_attribute("data-seconds"))
            timings.append((q.id, name, seconds, cpu))
            cli = runner.grade(ex, source, filename)
            shown = text[:text.rindex("\n(exit status")]
            assert _builtin_hashes_masked(shown) == _builtin_hashes_masked(report.text(cli)), (q.id, name)
            assert exit_status == str(cli.exit_status) == ("0" if name == "reference" else "1"), text
            if name != "reference":
                assert re.search(rf"^  FAIL  {re.escape(mutant.property)}\s", text, re.M), (q.id, name)
                assert f"--- {mutant.property}: minimal failing sequence ---" in text, text
            assert cpu <= CHECK_SECONDS, f"{q.id} {name}: Check took {cpu:.1f} CPU s in the browser"
            if q is graded[0]:
                reader.screenshot(f"{q.id}-check-{'pass' if name == 'reference' else 'fail'}")
        reader.assert_clean()
    report_table("check-timings", "\nin-browser Check (Pyodide in a Web Worker; the first check of a page boots Python):\n"
                 + "\n".join(f"  {qid} {name:32} {seconds:6.1f} s wall {cpu:6.1f} s CPU (browser processes)"
                             for qid, name, seconds, cpu in timings))
