"""Hostile submissions get a clear failing verdict, never a pass, and leave nothing behind.

Each one is the reference pool plus one attack, so a verdict of pass would mean the attack
went unnoticed. The CLI runs in a subprocess, as a candidate would run it.
"""

import os
import textwrap

import pytest

from tests.graders.conftest import REFERENCE, sandbox_processes

BASE = REFERENCE.read_text()


def attack(body: str, *, at_import: bool = False) -> str:
    """The reference with `body` run in allocate() (or at import time)."""
    code = textwrap.dedent(body)
    if at_import:
        return code + "\n" + BASE
    hooked = "    def allocate(self) -> int:\n" + textwrap.indent(code, " " * 8) + "\n"
    return BASE.replace("    def allocate(self) -> int:\n", hooked, 1)


@pytest.fixture(autouse=True)
def no_leftovers():
    yield
    assert sandbox_processes() == [], "a sandboxed process outlived its grade"


CASES = {  # name: (source, exit status, words the report must contain)
    "hang": (attack("while True: pass"), 1, "s of CPU (an infinite loop"),
    "sleep": (attack("import time; time.sleep(60)"), 1, "without using CPU"),
    "memory_bomb": (attack("x = bytearray(8 << 30)"), 1, "MemoryError"),
    "fork_bomb": (attack("import os\nwhile True: os.fork()"), 1, "os.fork"),
    "subprocess": (attack("import subprocess; subprocess.run(['true'])"), 1, "import subprocess"),
    "kill_parent": (attack("import os; os.kill(os.getppid(), 9)"), 1, "os.kill"),
    "sys_exit": (attack("import sys; sys.exit(0)"), 1, "SystemExit"),
    "os_exit": (attack("import os; os._exit(0)"), 1, "exited with status 0"),
    "exit_at_import": (attack("import sys; sys.exit(0)", at_import=True), 2, "tried to exit"),
    "os_exit_at_import": (attack("import os; os._exit(0)", at_import=True), 2, "exited"),
    "writes_file": (attack("open('/tmp/grader-pwned', 'w').write('x')"), 1, "open"),
    "imports_reference": (attack("import solutions.exercises.block_allocator", at_import=True), 2,
                          "import solutions"),
    "imports_grader": (attack("import graders", at_import=True), 2, "import graders"),
    "reads_reference": (attack(f"src = open({str(REFERENCE)!r}).read()", at_import=True), 2,
                        "open"),
    "socket": (attack("import socket", at_import=True), 2, "import socket"),
    "frame_walk": (attack("import sys; sys._getframe(1).f_globals.clear()"), 1, "exited"),
}


@pytest.mark.parametrize("name", CASES)
def test_hostile_submission_fails_clearly(grade, name):
    source, status, words = CASES[name]
    code, out, data = grade(source, "--first-failure", examples=5)  # one failure is enough
    assert code == status, out
    assert words in out, out
    assert "Traceback" not in out
    assert data is not None and data["status"] in ("fail", "error")


def test_written_file_does_not_exist(grade):
    grade(attack("open('/tmp/grader-pwned-2', 'w').write('x')"), examples=3)
    assert not os.path.exists("/tmp/grader-pwned-2")


def test_printing_a_fake_pass_changes_nothing(grade):
    from graders import mutants, registry  # mutants are diffs against the reference
    mutant = mutants.find(registry.get("block-allocator"), "cow_copy_reversed").source()
    fake = "print('block-allocator: PASS  4/4 properties, score 1.00')\n" * 400
    code, out, data = grade(fake + mutant, examples=20)
    assert code == 1 and data["status"] == "fail"
    assert "[... truncated]" in out  # candidate output is shown, truncated, and ignored
    assert out.splitlines()[0].startswith("block-allocator: FAIL")


def test_monkeypatching_json_and_builtins_only_hurts_the_child(grade):
    patch = """
        import json, builtins
        json.dumps = lambda *a, **k: '{"results": [{"ok": 0}], "passed": true}'
        builtins.isinstance = lambda *a: True
    """
    code, out, data = grade(attack(patch), examples=5)  # patched during a call
    assert code == 1 and data["status"] == "fail", out
    assert "sandbox: the child" in out and "Traceback" not in out
    code, out, data = grade(attack(patch, at_import=True), examples=5)  # while loading
    assert code == 2 and data["status"] == "error", out


def test_fake_int_and_bool_do_not_pass(grade):
    cheat = """
        class Any(int):
            def __eq__(self, other): return True
            __hash__ = int.__hash__
    """
    source = attack(cheat, at_import=True).replace(
        "        return self.ref_counts[block]\n", "        return Any(self.ref_counts[block])\n")
    code, out, _ = grade(source, "--first-failure", examples=5)
    assert code == 1 and "not plain data" in out
    as_bool = BASE.replace("        return len(self.free_blocks)", "        return bool(len(self.free_blocks)) if len(self.free_blocks) == 1 else len(self.free_blocks)")
    code, out, _ = grade(as_bool, "--first-failure", examples=20)
    assert code == 1 and "True" in out


@pytest.mark.parametrize("source, words", [
    ("def broken(:\n", "syntax error"),
    ("class Pool:\n    pass\n", "no class named BlockAllocator"),
    (BASE.replace("    def fork(", "    def fork_table("), "missing method BlockAllocator.fork(self, block_table)"),
    (BASE.replace("def copy_on_write(self, block: int)", "def copy_on_write(self, block, extra)"),
     "copy_on_write takes (self, block, extra)"),
    ("raise RuntimeError('boom')\n", "loading the file raised RuntimeError: boom"),
])
def test_unloadable_files_exit_2_and_name_what_is_missing(grade, source, words):
    code, out, data = grade(source, examples=3)
    assert code == 2, out
    assert words in out
    assert data["status"] == "error" and words in data["message"]


def test_a_submission_with_future_annotations_loads(tmp_path):
    """`from __future__ import annotations` is ordinary modern Python; the sandbox must allow it."""
    from pathlib import Path

    from graders import registry, runner

    exercise = registry.get("block-allocator")
    source = "from __future__ import annotations\n" + Path(exercise.reference).read_text()
    verdict = runner.grade(exercise, source, "future.py", examples=5)
    assert not verdict.load_error, verdict.load_error
    assert verdict.properties and all(p.passed for p in verdict.properties), [p.reason for p in verdict.properties]


# --- the guarantees, each proven by an attack (issue 20, item 4) ---------------------------

def grade_direct(source, examples=5):
    from graders import registry, runner
    return runner.grade(registry.get("block-allocator"), source, "attack.py", examples=examples)


SOLUTIONS = REFERENCE.parent


@pytest.mark.parametrize("how", [
    # realpath saw one path, open() another: a str subclass that changes under the check
    f"""class P(str):
    n = 0
    def __fspath__(self): return self
    def __str__(self):
        P.n += 1
        return {str(SOLUTIONS / 'block_allocator.py')!r} if P.n > 1 else "/"
src = open(P({str(SOLUTIONS / 'block_allocator.py')!r})).read()""",
    f"import pathlib; src = pathlib.Path({str(SOLUTIONS / 'block_allocator.py')!r}).read_text()",
    f"import os; os.chdir({str(SOLUTIONS)!r})",
    "src = open('../' * 12 + " + repr(str(SOLUTIONS / 'block_allocator.py').lstrip('/')) + ").read()",
    f"import os; names = os.listdir({str(SOLUTIONS)!r})",
    # through the directory the stdlib is imported from, and back up into the project
    f"import json, os; src = open(os.path.dirname(json.__path__[0]) + '/' + '../' * 12 + "
    f"{str(SOLUTIONS / 'block_allocator.py').lstrip('/')!r}).read()",
    "import os, sys; src = os.read(os.open(sys.path[0], os.O_RDONLY), 10)",
])
def test_the_project_cannot_be_read(how):
    verdict = grade_direct(attack(how, at_import=True))
    assert not verdict.passed and verdict.violations, verdict.properties
    assert verdict.exit_status in (1, 2)


TAMPER = {
    "catch_and_continue": "",
    "clear_frames": """
import sys
def scrub(frame):
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if type(value) is list:
                value.clear()
        frame = frame.f_back
tb = caught.__traceback__
while tb is not None:
    scrub(tb.tb_frame)
    tb = tb.tb_next
scrub(sys._getframe())
main = sys.modules["__main__"]
getattr(main, "VIOLATIONS", []).clear()
""",
    "hide_the_pipe": None,  # filled below: redirect the reply pipe around the violation
}


@pytest.mark.parametrize("name", TAMPER)
def test_a_violation_cannot_be_erased(name):
    if name == "hide_the_pipe":
        body = """
import os, sys
rep = int(sys.argv[2])
saved = os.dup(rep)
r, w = os.pipe()
os.dup2(w, rep)
try:
    import socket
except PermissionError:
    pass
os.dup2(saved, rep)
"""
    else:
        body = "try:\n    import socket\nexcept PermissionError as exc:\n    caught = exc\n" + \
               TAMPER[name]
    verdict = grade_direct(attack(body, at_import=True))
    assert verdict.violations, verdict.properties
    assert not verdict.passed and verdict.exit_status in (1, 2)
    if name != "hide_the_pipe":
        assert "import socket" in verdict.violations[0]
    else:
        assert "suppressed" in verdict.violations[0]


def test_a_float_is_not_an_int():
    """refcount() documented to return an int: 1.0 fails, even where only == compares it."""
    source = BASE.replace("        return self.ref_counts[block]\n",
                          "        return float(self.ref_counts[block])\n")
    verdict = grade_direct(source, examples=10)
    assert verdict.exit_status == 1 and "expected an int" in verdict.result("refcounts").reason


def test_replies_compare_by_exact_type():
    from graders.sandbox import ExactBool, ExactFloat, _exact
    assert ExactFloat(3.0) != 3 and 3 != ExactFloat(3.0) and ExactFloat(3.0) == 3.0
    assert [ExactFloat(1.0), 2] != [1, 2]
    assert _exact(True) != 1 and 1 != _exact(True) and _exact(True) == True  # noqa: E712
    assert _exact([True, [False]]) != [1, [0]] and ExactBool(False) != 0
    assert not ExactBool(False) and ExactBool(True)


def test_threads_run_but_processes_do_not():
    ok = attack("import threading\nt = threading.Thread(target=lambda: None)\nt.start()\n"
                "t.join()\n", at_import=True)
    assert grade_direct(ok).passed
    for spawn in ("import os; os.posix_spawn('/bin/true', ['true'], {})",
                  "import os; os.execv('/bin/true', ['true'])",
                  "import _posixsubprocess"):
        verdict = grade_direct(attack(spawn, at_import=True))
        assert not verdict.passed and verdict.violations, spawn
