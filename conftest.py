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
