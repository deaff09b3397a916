"""Verdicts do not depend on load: with 4 busy processes on the machine's cores, a reference
still passes every property and a mutant still fails on its named one, and nothing is cut
by a limit (limits count the child's CPU seconds, not the wall clock).

`python benchmarks/grader_load.py` runs every reference and every mutant the same way.
"""

import os
import subprocess
import sys

import pytest

from graders import mutants, registry, runner

BUSY = 4


@pytest.fixture
def busy_machine():
    """4 processes spinning on at most 2 cores (the CI's shape), stopped afterwards."""
    cores = sorted(os.sched_getaffinity(0))[:2]
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(BUSY)]
    for p in procs:
        os.sched_setaffinity(p.pid, cores)
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_reference_passes_and_mutant_fails_under_load(busy_machine):
    ex = registry.get("block-allocator")
    verdict = runner.grade(ex, ex.reference.read_text(), "reference.py", examples=25)
    assert verdict.passed, [(p.name, p.reason) for p in verdict.properties]
    assert all(p.examples >= runner.min_valid(25) for p in verdict.properties)
    mutant = mutants.find(ex, "cow_copy_reversed")
    result = runner.grade_mutant(ex, mutant, examples=25)
    assert result.failed and not result.reason.startswith(("sandbox", "not checked")), result
