"""The grader version in every results.json: bumped when a verdict can change for the same file
and seed (0.2: every check live in every run, CPU-second limits, exact int and bool)."""

__version__ = "0.2.0"
