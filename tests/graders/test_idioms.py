"""Ordinary Python loads and grades in the sandbox, wherever the interpreter lives.

`idioms/` holds small correct block pools written with the tools a candidate reaches for
(NamedTuple, namedtuple, TypeVar, NewType, a functional Enum, dataclasses, hashlib, logging,
threading, queue, struct, heapq, bisect, functools, itertools, pickle); each must pass. And
every standard-library module that imports in a plain isolated interpreter imports in the
sandbox too (the sandbox uid cannot read /root, where pyenv keeps this interpreter), except
the ones that need a forbidden module (subprocess, socket, gc, signal, ...), which are refused.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graders import registry, runner

EX = registry.get("block-allocator")
IDIOMS = sorted((Path(__file__).parent / "idioms").glob("*.py"))
FORBIDDEN = {"subprocess", "multiprocessing", "socket", "_socket", "ssl", "_ssl", "ctypes", "_ctypes",
             "pty", "signal", "_signal", "_posixsubprocess", "gc", "resource", "fcntl", "mmap",
             "asyncio", "_testcapi", "_testinternalcapi", "_xxsubinterpreters", "faulthandler",
             "_tracemalloc", "tracemalloc"}
NOISY = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "lib2to3",
         "ensurepip", "venv", "pydoc", "test", "__main__", "readline", "curses", "_curses",
         "_curses_panel"}  # open a browser, print, want a terminal or a display, or are huge


@pytest.mark.parametrize("path", IDIOMS, ids=lambda p: p.stem)
def test_an_ordinary_solution_loads_and_passes(path):
    verdict = runner.grade(EX, path.read_text(), str(path), examples=10)  # as typed: absolute
    assert not verdict.load_error, verdict.load_error
    assert verdict.passed, ([(p.name, p.reason) for p in verdict.properties if not p.passed],
                            verdict.violations)


def test_the_standard_library_imports():
    names = sorted(set(sys.stdlib_module_names) - FORBIDDEN - NOISY)
    probe = ("import importlib, json, sys\nok = []\nfor n in %r:\n    try:\n"
             "        importlib.import_module(n); ok.append(n)\n    except Exception:\n"
             "        pass\nprint(json.dumps(ok))" % names)
    plain = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True,
                           text=True, timeout=120, env={})
    importable = json.loads(plain.stdout.splitlines()[-1])
    assert {"hashlib", "logging", "threading", "queue", "struct", "pickle"} <= set(importable)
    submission = (f"import importlib\nMISSING = []\nfor n in {importable!r}:\n    try:\n"
                  "        importlib.import_module(n)\n    except PermissionError as e:\n"
                  "        pass  # a refusal: it imports a forbidden module (timeit needs gc)\n"
                  "    except Exception as e:\n        MISSING.append((n, repr(e)[:60]))\n"
                  "print('MISSING', MISSING)\n" + EX.reference.read_text())
    verdict = runner.grade(EX.only("conservation"), submission, "imports.py", examples=1)
    assert "MISSING []" in verdict.output, verdict.output
    assert all(v.startswith("import ") for v in verdict.violations), verdict.violations
