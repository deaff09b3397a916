"""Graders: run a candidate's class in a sandbox and check it with property tests."""

from graders.version import __version__  # noqa: F401
