"""The grader tests. pytest imports this directory as the top-level package `graders` (tests/
has no __init__.py), which shadows the real package: its submodules would then come from
wherever the project is installed (an editable install of another checkout), not from this
one. So the real package's directory, beside this checkout's tests, comes first in the path."""

from pathlib import Path

_REAL = str(Path(__file__).resolve().parents[2] / "graders")
if _REAL not in __path__:
    __path__.insert(0, _REAL)
from graders.version import __version__  # noqa: E402,F401  (as the real package exports it)
