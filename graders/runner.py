"""Grade one submission: load it in a sandbox, check its interface, run each property.

Properties are checked by hypothesis stateful runs under one fixed profile (seeded, no
example database, no deadline), so the same file and seed give the same verdict; properties
whose examples do not depend on the focus share a run (Exercise.runs). A failure is shrunk
by hypothesis and replayed; the replay's transcript becomes the repro, and the run is
repeated for the properties still open.

A verdict rests only on examples the submission ran: any failed check fails its property,
whichever run found it, and a pass needs at least `min_valid(examples)` clean examples.
Limits are counted in the child's CPU seconds, not wall time, so load cannot flip a
verdict; when a limit cuts a run anyway, that property is "not checked (limit)" and the
verdict's status is `error` (rerun), never a failure of the code.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, replace

from hypothesis import HealthCheck, Phase, Verbosity, seed as hypothesis_seed, settings
from hypothesis.errors import Flaky, Unsatisfiable
from hypothesis.internal.conjecture import engine as _engine, providers as _providers
from hypothesis.stateful import run_state_machine_as_test

from graders.exercise import (Exercise, PropertyFailure, RunStats, TooManyDropped, Transcript,
                              shown_steps)
from graders.sandbox import Limits, Sandbox, SandboxFatal, SandboxLimit
from graders.script import repro_script


PASS, FAIL, UNCHECKED, LIMIT = "pass", "fail", "not checked", "limit"

# Hypothesis mixes literals from every "local" module the process has imported into a few of
# its draws (and caches them under .hypothesis/ in the working directory). The examples for a
# seed would then depend on what else the process loaded (the CLI, a test run, a notebook) and
# differ from the browser's, where Pyodide gets no such pool. A verdict must be the same
# everywhere for the same file and seed, so the pool stays empty here too.
_providers._get_local_constants = lambda: _providers._local_constants

# Hypothesis stops shrinking after 500 successful shrinks. On the 60 catalogued mutants no
# shrink went past 30 but two: one repro came out 10 lines shorter for it (19 -> 9), the other
# one line shorter for 1,400 more examples (28 s on a 2-core machine, about a minute in the
# browser). A count, not a clock, so the repro stays the same on every machine.
MAX_SHRINKS = 30
_engine.MAX_SHRINKS = MAX_SHRINKS


@dataclass
class PropertyResult:
    name: str
    summary: str
    passed: bool
    reason: str = ""
    script: str = ""
    outcome: str = PASS       # pass | fail | not checked (others failed first) | limit
    examples: int = 0         # valid examples the verdict rests on (a pass needs min_valid)
    note: str = ""            # said after the reason (e.g. a limit cut the shrinking)

    @property
    def failed(self) -> bool:
        return self.outcome == FAIL


@dataclass
class Verdict:
    exercise: str
    filename: str
    seed: int
    examples: int
    load_error: str = ""                 # set: the file could not be graded (exit 2)
    limit_error: str = ""                # set: a limit cut the load itself (exit 3)
    nondeterministic: str = ""           # set: a replay answered differently (exit 2)
    properties: list[PropertyResult] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    output: str = ""                     # candidate stdout/stderr, truncated
    seconds: float = 0.0                 # not shown in text reports (they must be stable)
    numbering: list[str] = field(default_factory=list)  # every property, as `grader show` lists
    coverage: Counter = field(default_factory=Counter)  # label -> times the runs reached it

    def result(self, name: str) -> PropertyResult | None:
        """The named property's result (None: it was not graded)."""
        return next((p for p in self.properties if p.name == name), None)

    @property
    def failed(self) -> list[str]:
        """Properties with a failed check, in report order."""
        return [p.name for p in self.properties if p.failed]

    @property
    def not_checked(self) -> list[str]:
        """Properties neither passed nor failed (others failed first, or a limit cut them)."""
        return [p.name for p in self.properties if not p.passed and not p.failed]

    @property
    def cannot_grade(self) -> str:
        """Why no property could be judged: the file, or its answers changing on replay."""
        return self.load_error or self.nondeterministic

    @property
    def limited(self) -> bool:
        """A limit, not a check, decided: nothing failed but some property was cut."""
        return (not self.cannot_grade and not self.violations and not self.failed
                and (bool(self.limit_error) or any(p.outcome == LIMIT for p in self.properties)))

    @property
    def passed(self) -> bool:
        return (not self.cannot_grade and not self.limit_error and not self.violations
                and bool(self.properties) and all(p.passed for p in self.properties))

    @property
    def score(self) -> float:
        if self.cannot_grade or not self.properties:
            return 0.0
        return sum(p.passed for p in self.properties) / len(self.properties)

    @property
    def status(self) -> str:
        """Exercism's top-level status: error when the file or a limit decided."""
        return ("error" if self.cannot_grade or self.limited else
                "pass" if self.passed else "fail")

    @property
    def exit_status(self) -> int:
        """0 pass, 1 fail, 2 cannot grade the file (or it is not deterministic), 3 a limit
        decided (rerun)."""
        return (2 if self.cannot_grade else 3 if self.limited else
                0 if self.passed else 1)


def min_valid(examples: int) -> int:
    """A property passes only if at least half its examples ran to the end, and none was
    dropped (an example that broke a property already failed is dropped so the search for
    this property's own failure can go on; but the examples left would be the submission's
    choice, and hypothesis steers toward them, so such a run is never a pass)."""
    return max(1, (examples + 1) // 2)


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
          examples: int | None = None, limits: Limits | None = None, shrink: bool = True,
          stop_at_first_failure: bool = False) -> Verdict:
    """Grade `source`: hypothesis runs over the properties of `exercise` (Exercise.runs; see
    Exercise.only), in order. Every check is live in every run, so a run may fail a property
    other than its focus: that property is reported failed and the run is repeated for the
    properties still open.
    `stop_at_first_failure`: once any property failed, skip the runs still to come (they
    are reported "not checked"); a mutant's test needs no more."""
    examples = examples or exercise.default_examples
    verdict = Verdict(exercise.name, filename, seed, examples,
                      numbering=[p.name for p in exercise.every_property])
    start = time.monotonic()
    sandbox = Sandbox(source, filename, limits or Limits())
    try:
        sandbox.start()
        try:
            loaded = sandbox.load(exercise.class_name, [m.name for m in exercise.methods])
        except SandboxLimit as exc:
            loaded = {"limit": f"loading was cut by a limit: {exc}"}
        except SandboxFatal as exc:
            loaded = {"error": f"the file could not be loaded: {exc}"}
        if "limit" in loaded:
            verdict.limit_error = loaded["limit"]
        elif "error" in loaded:
            verdict.load_error = loaded["error"]
        elif problems := interface_problems(exercise, loaded["members"]):
            verdict.load_error = "; ".join(problems)
        else:
            _grade_properties(exercise, sandbox, verdict, filename, shrink, stop_at_first_failure)
        verdict.violations = sandbox.final_violations()
    finally:
        sandbox.close()
    verdict.output = sandbox.output()
    verdict.seconds = time.monotonic() - start
    return verdict


def grade_mutant(exercise: Exercise, mutant, *, seed: int = 0, examples: int | None = None,
                 shrink: bool = False) -> PropertyResult:
    """The fastest grade that proves a catalogued mutant (graders.mutants.Mutant) is caught on
    the property it names: a run of that property alone (every check stays live), unshrunk.
    Returns that property's result (a PropertyResult whose .failed must be True)."""
    verdict = grade(exercise.only(mutant.property), mutant.source(), mutant.name, seed=seed,
                    examples=examples, shrink=shrink)
    return verdict.result(mutant.property)


def _grade_properties(exercise, sandbox, verdict, filename, shrink, stop_first) -> None:
    everything = {p.name: p for p in exercise.every_property}
    results: dict[str, PropertyResult] = {}
    for group in exercise.runs:
        while pending := [p for p in group if p.name not in results]:
            failed = frozenset(n for n, r in results.items() if r.failed)
            if stop_first and failed:
                for p in pending:
                    results[p.name] = PropertyResult(p.name, p.summary, False, "not checked: "
                                                     "stopped at the first failure",
                                                     outcome=UNCHECKED)
                break
            try:
                result = _run_property(exercise, pending[0], sandbox, verdict.seed,
                                       verdict.examples, filename, shrink, failed, everything,
                                       verdict.coverage)
            except NotDeterministic as exc:
                verdict.nondeterministic = str(exc)
                verdict.properties = []
                return
            if result.failed:  # the focus or another property: the rest run again
                results[result.name] = result
            else:  # the run ended without a failure: its outcome is every open property's
                for p in pending:
                    results[p.name] = replace(result, name=p.name, summary=p.summary)
    # the graded properties first, in order; then any other a check failed on the way
    order = [p.name for p in exercise.properties]
    order += [p.name for p in exercise.every_property if p.name not in order]
    verdict.properties = sorted(results.values(), key=lambda r: order.index(r.name))


class NotDeterministic(Exception):
    """The submission answered a replay of the same calls differently: no property can be
    judged (a failure cannot be reproduced, nor a pass trusted)."""


NONDETERMINISTIC = ("the class answered the same calls differently when they were replayed, "
                    "so no property can be judged: it must be "
                    "deterministic. Seed any randomness (random.Random(0) kept on the "
                    "instance) and keep no state outside the instance (a module-level "
                    "counter, a global cache, the clock)")


def _run_property(exercise, prop, sandbox: Sandbox, seed, examples, filename, shrink,
                  failed, everything, coverage=None) -> PropertyResult:
    transcript, stats = Transcript(), RunStats(drop_limit=examples)
    machine = type(f"{exercise.machine.__name__}_{prop.name.replace('-', '_')}",
                   (exercise.machine,),
                   {"sandbox": sandbox, "focus": prop.name, "transcript": transcript,
                    "failed": failed, "excused": frozenset(exercise.excused),
                    "stats": stats})
    hypothesis_seed(seed)(machine)
    result = PropertyResult(prop.name, prop.summary, passed=True)
    checked = False   # the failure is a check's (not a crash): its shortest repro is shown
    sandbox.begin_budget()
    try:
        run_state_machine_as_test(machine, settings=profile(examples, exercise.steps, shrink))
    except PropertyFailure as failure:
        result = _failure(everything, failure.prop, failure.reason)
        checked = True
    except SandboxLimit as limit:
        if stats.first_failure is not None:  # a check failed before the limit cut the shrink
            first, checked = stats.first_failure, True
            result = _failure(everything, first.prop, first.reason)
            result.note = f" (shrinking cut short: {limit})"
            result.reason += result.note
            transcript.steps = []   # cut mid-call: the shortest complete failure is shown
        else:
            result = PropertyResult(prop.name, prop.summary, False, f"not checked (limit): "
                                    f"{limit}", outcome=LIMIT)
        sandbox.restart()  # the next property gets a fresh child and a fresh budget
        _reload(exercise, sandbox)
    except SandboxFatal as fatal:
        result = _failure(everything, prop.name, f"sandbox: {fatal}")
        sandbox.restart()
        _reload(exercise, sandbox)
    except (Unsatisfiable, TooManyDropped):
        result = _unchecked(prop, failed, stats.valid, examples, stats.started)
    except Flaky as flaky:
        cut = next((e for e in getattr(flaky, "exceptions", ()) if isinstance(e, SandboxLimit)),
                   None)
        if cut is None:
            raise NotDeterministic(NONDETERMINISTIC) from None
        # a limit cut the first run of an example and not its replay: the machine, not the
        # class, was inconsistent (a busy moment), so this is a limit's no verdict
        result = PropertyResult(prop.name, prop.summary, False, f"not checked (limit): {cut}",
                                outcome=LIMIT)
        sandbox.restart()
        _reload(exercise, sandbox)
    else:
        result.examples = stats.valid
        if stats.valid < min_valid(examples) or stats.dropped:
            result = _unchecked(prop, failed, stats.valid, examples, stats.started)
    if coverage is not None:
        coverage.update(stats.reached)
    if result.failed:
        if checked:
            _shortest_repro(result, transcript, stats)
        if transcript.steps:
            result.script = repro_script(exercise, filename, transcript, result.name,
                                         result.reason)
    return result


def _shortest_repro(result: PropertyResult, transcript: Transcript, stats: RunStats) -> None:
    """The repro is the shortest failing sequence the run saw for this property: usually the
    shrinker's last replay, but a shrink stopped early (the shrink cap, a limit) may have
    met a shorter one on the way. Its reason comes with it."""
    best = stats.shortest.get(result.name)
    if best is None:
        return
    shown, steps, reason = best
    if not transcript.steps or shown < len(shown_steps(transcript.steps)):
        transcript.steps = steps
        result.reason = reason + result.note


def _failure(everything, name, reason) -> PropertyResult:
    prop = everything.get(name)
    if prop is None:  # a machine tagged a check with a name the exercise does not declare
        raise ValueError(f"a check is tagged {name!r}, which is not a property of the exercise")
    return PropertyResult(name, prop.summary, False, reason, outcome=FAIL)


def _unchecked(prop, failed, valid, examples, tried) -> PropertyResult:
    why = (f"{tried - valid} of the {tried} examples tried broke "
           f"{', '.join(sorted(failed))} first, so the ones left are the submission's choice"
           if failed else f"only {valid} examples ran (a pass needs {min_valid(examples)})")
    return PropertyResult(prop.name, prop.summary, False, f"not checked: {why} (fix that, "
                          "then this one is tested)", outcome=UNCHECKED, examples=valid)


def _reload(exercise: Exercise, sandbox: Sandbox) -> None:
    try:
        sandbox.load(exercise.class_name, [m.name for m in exercise.methods])
    except SandboxFatal:
        pass  # the next property reports the sandbox failure itself
