"""Graders: run a candidate's class in a sandbox and check it with property tests."""

__version__ = "0.1.0"
