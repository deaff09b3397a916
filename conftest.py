"""Shows how long each notebook took to execute, so a slow answer is seen, not guessed, and the
measurement tables the site's tests keep (a pytest-xdist worker's own output is not shown)."""

import time
from collections import defaultdict
from pathlib import Path

MEASUREMENTS = Path(__file__).parent / "test-artifacts" / "site"
_session_start = [time.time()]

_notebook_seconds: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] += report.duration


def pytest_sessionstart(session):
    _session_start[0] = time.time()


def pytest_terminal_summary(terminalreporter):
    tables = sorted(p for p in MEASUREMENTS.glob("*.txt") if p.stat().st_mtime >= _session_start[0])
    if tables:
        terminalreporter.section("measurements (kept in test-artifacts/site/)")
        for table in tables:
            terminalreporter.write_line(table.read_text(encoding="utf-8").rstrip())
    if not _notebook_seconds:
        return
    terminalreporter.section("notebook execution time")
    for path, seconds in sorted(_notebook_seconds.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds:7.2f} s  {path}")
    terminalreporter.write_line(f"{sum(_notebook_seconds.values()):7.2f} s  total")


# The slowest files (each a long, serial browser session) first: under pytest-xdist a file stays
# on one worker, so they start while the other worker takes the many short files, instead of
# running alone at the end.
FIRST = ("tests/test_site.py", "tests/test_site_check.py")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in FIRST)  # stable: order kept
