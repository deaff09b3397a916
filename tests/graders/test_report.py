"""results.json follows Exercism's test-runner interface, version 3, in every outcome.

The schema below is written from exercism/docs@0e40e30d3f14011be61aa40246a2842259ef1899:
building/tooling/test-runners/interface.md: top level `version` (number), `status` (pass,
fail, error), `message` (a string, required when status is error), `tests`; per test `name`,
`status` (pass, fail, error), `message` (string or null), `output` (optional, at most 500
characters), `test_code` (string), `task_id` (optional number: the property's number in
`grader show`). Extra keys (seed, score, ...) are allowed by the interface.
"""

import json

import jsonschema
import pytest

from graders import mutants, registry, report, runner
from graders.sandbox import Limits

TEST = {
    "type": "object",
    "required": ["name", "status", "test_code"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "status": {"enum": ["pass", "fail", "error"]},
        "message": {"type": ["string", "null"]},
        "output": {"type": ["string", "null"], "maxLength": 500},
        "test_code": {"type": "string"},
        "task_id": {"type": "integer", "minimum": 1},
    },
    "allOf": [{"if": {"properties": {"status": {"enum": ["fail", "error"]}}},
               "then": {"required": ["message"], "properties": {"message": {"type": "string"}}}}],
}
RESULTS_V3 = {
    "type": "object",
    "required": ["version", "status"],
    "properties": {
        "version": {"const": 3},
        "status": {"enum": ["pass", "fail", "error"]},
        "message": {"type": ["string", "null"]},
        "tests": {"type": "array", "items": TEST},
    },
    "allOf": [
        {"if": {"properties": {"status": {"const": "error"}}},
         "then": {"required": ["message"], "properties": {"message": {"type": "string",
                                                                      "minLength": 1}}}},
        {"if": {"properties": {"status": {"enum": ["pass", "fail"]}}},
         "then": {"required": ["tests"]}},
    ],
}

EX = registry.get("block-allocator")
REFERENCE = EX.reference.read_text()
# CPU burnt by the clock, not by a fixed count of work: a fast quiet machine must cross the limits too
BURN = ("import time as _clock\n"
        "def _burn(seconds):\n"
        "    end = _clock.process_time() + seconds\n"
        "    while _clock.process_time() < end:\n"
        "        pass\n")
SLOW = BURN + REFERENCE.replace("    def allocate(self) -> int:\n",  # 50 ms of CPU per call
                                "    def allocate(self) -> int:\n        _burn(0.05)\n", 1)
SLOW_ONCE = BURN + "FIRST = [True]\n" + REFERENCE.replace(  # one call of 1 s CPU per child
    "    def allocate(self) -> int:\n", "    def allocate(self) -> int:\n"
    "        if FIRST.pop() if FIRST else False: _burn(1.0)\n", 1)


def valid(verdict) -> dict:
    data = json.loads(json.dumps(report.results_json(verdict)))
    jsonschema.validate(data, RESULTS_V3)
    return data


def test_pass_fail_and_cannot_load_validate():
    data = valid(runner.grade(EX, REFERENCE, "ref.py", examples=5))
    assert data["status"] == "pass" and data["message"] is None
    assert [t["task_id"] for t in data["tests"]] == [1, 2, 3, 4]
    mutant = mutants.find(EX, "cow_copy_reversed").source()
    verdict = runner.grade(EX, mutant, "m.py", examples=10, shrink=False)
    data = valid(verdict)
    assert data["status"] == "fail" and verdict.exit_status == 1
    assert {t["status"] for t in data["tests"]} >= {"fail"}
    verdict = runner.grade(EX, "def broken(:\n", "b.py")
    data = valid(verdict)
    assert data["status"] == "error" and "syntax error" in data["message"]
    assert verdict.exit_status == 2


def test_long_output_is_cut_to_500_characters():
    loud = "print('x' * 3000)\n" + REFERENCE
    data = valid(runner.grade(EX, loud, "loud.py", examples=3))
    assert len(data["output"]) <= 500


@pytest.mark.parametrize("source, limits, words", [
    # a budget well above what starting and loading a child costs on a busy machine, so the cut
    # falls inside a property's examples (a cut while loading is the next test's case)
    (SLOW, Limits(property_cpu_s=0.5), "of the submission's CPU"),
    (SLOW_ONCE, Limits(call_wall_s=0.3, call_cpu_s=5), "still waiting for the CPU"),
])
def test_a_limit_is_no_verdict_and_blames_nothing(source, limits, words):
    """A property cut by a limit is 'not checked (limit)': status error, exit 3, and no
    property is reported failed, the one cut or any later one."""
    verdict = runner.grade(EX, source, "slow.py", examples=30, limits=limits)
    assert verdict.failed == [], [(p.name, p.reason) for p in verdict.properties]
    cut = [p for p in verdict.properties if p.outcome == runner.LIMIT]
    assert cut and all(words in p.reason for p in cut), [p.reason for p in verdict.properties]
    assert verdict.status == "error" and verdict.exit_status == 3
    data = valid(verdict)
    assert "rerun on a quieter machine" in data["message"]
    assert "not reproducible" not in json.dumps(data)
    assert "rerun on a quieter machine" in report.text(verdict)


def test_a_limit_while_loading_is_no_verdict_either():
    slow_load = BURN + "_burn(1.0)\n" + REFERENCE  # 1 s of CPU at import
    verdict = runner.grade(EX, slow_load, "ref.py", limits=Limits(call_wall_s=0.3, call_cpu_s=5))
    assert not verdict.load_error and verdict.exit_status == 3, verdict.load_error
    assert "rerun on a quieter machine" in valid(verdict)["message"]


def test_the_report_does_not_depend_on_what_else_the_process_imported(tmp_path):
    """`grader check` alone, and the same check in a process that first imported other code
    (a notebook's, a test suite's), print the same report for the same file and seed.
    Hypothesis would mix literals from every imported local module into its draws; the
    browser, which runs the same suite in Pyodide, gets none, and so must the CLI."""
    import subprocess
    import sys

    ex = registry.get("scheduler")
    mutant = mutants.find(ex, "admission_skips_head")
    (tmp_path / "m.py").write_text(mutant.source())
    check = f"sys.exit(main(['check', {ex.name!r}, 'm.py']))"
    alone, after_other_code = (
        subprocess.run([sys.executable, "-c", f"import sys{extra}; from graders.cli import main; "
                        + check], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        for extra in ("", ", solutions.serving, solutions.step_model, solutions.calibration.fidelity"))
    assert alone.returncode == 1, alone.stdout + alone.stderr
    assert after_other_code.stdout == alone.stdout
    assert report.text(runner.grade(ex, mutant.source(), "m.py")) == alone.stdout


def test_a_one_bug_report_leads_with_its_failure():
    """The headline counts (no score), the failed property comes first with a one-line reason
    that fits a phone, the properties it blocks are one plain line, and the whole reason is
    printed with the repro."""
    mutant = mutants.find(EX, "cow_copy_reversed")
    verdict = runner.grade(EX, mutant.source(), "m.py", examples=20)
    lines = report.text(verdict).splitlines()
    assert lines[0].startswith("block-allocator: FAIL  1 failed, 3 not checked  (seed 0")
    assert "score" not in lines[0] and "0.00" not in report.text(verdict)
    assert lines[1] == "  FAIL  copy-on-write" and len(lines[2].strip()) <= report.BRIEF
    assert lines[3] == "  3 properties are checked once `copy-on-write` passes"
    assert "--- copy-on-write: minimal failing sequence ---" in lines
    data = valid(verdict)
    assert data["headline"] == "1 failed, 3 not checked"
    assert data["message"].startswith("1 failed, 3 not checked: copy-on-write: ")
    waiting = [t for t in data["tests"] if t["status"] == "error"]
    assert len(waiting) == 3 and {t["message"] for t in waiting} == {
        "checked once `copy-on-write` passes"}


def test_a_brief_reason_is_one_short_line():
    long = "copy_on_write(0) returned [1, [1, 0]]: the copy must be (source, destination) = (0, 1)"
    short = report.brief(long)
    assert len(short) <= report.BRIEF and short.endswith("...") and long.startswith(short[:-3])
    assert report.brief("a\nshort   one") == "a short one"


def test_a_nondeterministic_class_gets_the_determinism_verdict_not_failures():
    """A correct pool that hands out a random free block (unseeded) answers a replay
    differently: no property is scored, and the message says what to seed."""
    chance = REFERENCE.replace("from collections import deque\n",
                               "import random\nfrom collections import deque\n").replace(
        "        block = self.free_blocks.popleft()\n",
        "        block = random.choice(self.free_blocks)\n        self.free_blocks.remove(block)\n")
    assert chance != REFERENCE
    verdict = runner.grade(EX, chance, "chance.py")
    assert verdict.nondeterministic and verdict.failed == [] and verdict.exit_status == 2
    text = report.text(verdict)
    assert "not deterministic" in text and "random.Random(0)" in text
    data = valid(verdict)
    assert data["status"] == "error" and "not deterministic" in data["message"]
    assert "must be deterministic" in EX.task


def test_the_repro_is_the_shortest_failure_the_run_saw():
    """With shrinking off, the run's first failing example is long; the repro shown is the
    shortest failing sequence met on the way (here: the unshrunk run's only one, or shorter)."""
    mutant = mutants.find(EX, "cow_copy_reversed")
    shrunk = runner.grade(EX.only("copy-on-write"), mutant.source(), "m.py", examples=20)
    result = shrunk.result("copy-on-write")
    assert result.failed and result.script.count("\n") < 12, result.script


def test_a_shrink_stopped_early_still_shows_the_shortest_failure_seen():
    """The shrinker's last replay is the repro unless the run met a shorter failing sequence
    of the same property (a shrink cut by its cap or a limit): then that one, with its reason."""
    from graders.exercise import RunStats, Step, Transcript
    long = Transcript([Step(None, (2,))] + [Step("allocate", ()) for _ in range(9)])
    short = [Step(None, (2,)), Step("allocate", ())]
    stats = RunStats(shortest={"refcounts": (2, short, "the short one")})
    result = runner.PropertyResult("refcounts", "", False, "the long one", outcome=runner.FAIL)
    runner._shortest_repro(result, long, stats)
    assert long.steps == short and result.reason == "the short one"
    result.reason = "unchanged"
    runner._shortest_repro(result, Transcript(list(short)), RunStats(
        shortest={"refcounts": (5, [], "longer")}))
    assert result.reason == "unchanged"
