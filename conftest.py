"""Shows how long each notebook took to execute, so a slow answer is seen, not guessed."""

from collections import defaultdict

_notebook_seconds: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] += report.duration


def pytest_terminal_summary(terminalreporter):
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
