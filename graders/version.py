"""The grader version in every results.json: bumped when a verdict can change for the same file
and seed (0.2: every check live in every run, CPU-second limits, exact int and bool; 0.3: pool pressure and new draws in the
strategies, the shortest repro seen, a determinism verdict, beam-fork's window its own property)."""

__version__ = "0.3.0"
