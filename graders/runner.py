"""Grade one submission: load it in a sandbox, check its interface, run each property.

Every property runs as its own hypothesis stateful test under one fixed profile (seeded,
no example database, no deadline), so the same file and seed give the same verdict. A
failure is shrunk by hypothesis and replayed; the replay's transcript becomes the repro.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, Verbosity, seed as hypothesis_seed, settings
from hypothesis.errors import Flaky, Unsatisfiable
from hypothesis.stateful import run_state_machine_as_test

from graders.exercise import Exercise, PropertyFailure, Transcript
from graders.sandbox import Limits, Sandbox, SandboxFatal
from graders.script import repro_script


@dataclass
class PropertyResult:
    name: str
    summary: str
    passed: bool
    reason: str = ""
    script: str = ""


@dataclass
class Verdict:
    exercise: str
    filename: str
    seed: int
    examples: int
    load_error: str = ""                 # set: the file could not be graded (exit 2)
    properties: list[PropertyResult] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    output: str = ""                     # candidate stdout/stderr, truncated
    seconds: float = 0.0                 # not shown in text reports (they must be stable)

    @property
    def passed(self) -> bool:
        return (not self.load_error and not self.violations
                and all(p.passed for p in self.properties))

    @property
    def score(self) -> float:
        if self.load_error or not self.properties:
            return 0.0
        return sum(p.passed for p in self.properties) / len(self.properties)

    @property
    def exit_status(self) -> int:
        return 2 if self.load_error else 0 if self.passed else 1


def profile(examples: int, steps: int, shrink: bool = True) -> settings:
    """The one hypothesis profile every grade uses. Without shrinking a verdict names the same
    failed properties, only with longer repro scripts: catalogue runs that need just the names
    skip it (shrinking is most of the time a failing property takes)."""
    return settings(max_examples=examples, stateful_step_count=steps, database=None,
                    deadline=None, derandomize=False, print_blob=False,
                    report_multiple_bugs=False, verbosity=Verbosity.quiet,
                    suppress_health_check=list(HealthCheck),
                    phases=(Phase.explicit, Phase.generate) + ((Phase.shrink,) if shrink else ()))


def interface_problems(exercise: Exercise, members: dict) -> list[str]:
    """Missing methods and signatures that cannot be called the way the interface says."""
    problems = []
    for m in exercise.methods:
        where = f"{exercise.class_name}.{m.signature()}"
        if m.name not in members:
            problems.append(f"missing method {where}")
            continue
        params = members[m.name]
        if not isinstance(params, list):
            continue  # signature not introspectable: let the calls decide
        try:
            kinds = [(str(p[1]), bool(p[2])) for p in params[1:]]  # drop self
        except (IndexError, TypeError):
            continue
        required = sum(k in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD") and not d
                       for k, d in kinds)
        positional = sum(k in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD") for k, _ in kinds)
        star = any(k == "VAR_POSITIONAL" for k, _ in kinds)
        kw_required = any(k == "KEYWORD_ONLY" and not d for k, d in kinds)
        n = len(m.params)
        if required > n or (positional < n and not star) or kw_required:
            got = ", ".join(["self"] + [p[0] for p in params[1:]])
            problems.append(f"{exercise.class_name}.{m.name} takes ({got}) but the "
                            f"interface is {m.signature()}")
    return problems


def grade(exercise: Exercise, source: str, filename: str, *, seed: int = 0,
          examples: int | None = None, limits: Limits | None = None, shrink: bool = True) -> Verdict:
    examples = examples or exercise.default_examples
    verdict = Verdict(exercise.name, filename, seed, examples)
    start = time.monotonic()
    sandbox = Sandbox(source, filename, limits or Limits())
    try:
        sandbox.start()
        try:
            loaded = sandbox.load(exercise.class_name, [m.name for m in exercise.methods])
        except SandboxFatal as exc:
            loaded = {"error": f"the file could not be loaded: {exc}"}
        if "error" in loaded:
            verdict.load_error = loaded["error"]
        elif problems := interface_problems(exercise, loaded["members"]):
            verdict.load_error = "; ".join(problems)
        else:
            for prop in exercise.properties:
                verdict.properties.append(_run_property(exercise, prop, sandbox, seed,
                                                        examples, filename, shrink))
        verdict.violations = list(sandbox.violations)
    finally:
        sandbox.close()
    verdict.output = sandbox.output()
    verdict.seconds = time.monotonic() - start
    return verdict


def _run_property(exercise, prop, sandbox: Sandbox, seed, examples, filename, shrink) -> PropertyResult:
    transcript = Transcript()
    machine = type(f"{exercise.machine.__name__}_{prop.name.replace('-', '_')}",
                   (exercise.machine,),
                   {"sandbox": sandbox, "focus": prop.name, "transcript": transcript})
    hypothesis_seed(seed)(machine)
    result = PropertyResult(prop.name, prop.summary, passed=True)
    try:
        run_state_machine_as_test(machine, settings=profile(examples, exercise.steps, shrink))
    except PropertyFailure as failure:
        result.passed, result.reason = False, failure.reason
    except SandboxFatal as fatal:
        result.passed, result.reason = False, f"sandbox: {fatal}"
        sandbox.restart()  # the next property gets a fresh child
        _reload(exercise, sandbox)
    except Unsatisfiable:
        result.passed = False
        result.reason = ("not checked: every example broke another property first "
                         "(fix the others, then this one is tested)")
    except Flaky as flaky:
        result.passed = False
        result.reason = ("the submission's behaviour is not reproducible (it depends on "
                         f"state outside the instance, or on chance): {str(flaky)[:200]}")
    if not result.passed and transcript.steps and not result.reason.startswith("not checked"):
        result.script = repro_script(exercise, filename, transcript, prop.name, result.reason)
    return result


def _reload(exercise: Exercise, sandbox: Sandbox) -> None:
    try:
        sandbox.load(exercise.class_name, [m.name for m in exercise.methods])
    except SandboxFatal:
        pass  # the next property reports the sandbox failure itself
