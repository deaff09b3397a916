"""What an exercise is: a spec, an interface, and properties that drive a sandboxed class.

Adding an exercise means adding one package under ``graders/exercises/`` that defines
``EXERCISE = Exercise(...)``, with a ``starter.py`` and ``mutants/*.py`` beside it and a
reference solution in ``solutions/``. The engine needs no change.

A property is a hypothesis ``RuleBasedStateMachine`` subclass of :class:`GradedMachine`.
All of an exercise's properties share one machine: each check is tagged with the property
it belongs to (``self.check("conservation", ok, why)``). Each run has a *focus*, the property
it is graded for (a machine may steer its strategies by it: such properties are named in
``Exercise.steered`` and get runs of their own; the others share one run), and every check is
live in every run: a failed check fails the property it belongs to, whichever run found it, so
a submission cannot pass by behaving only while a property is being watched. The one example a
run may drop is one that breaks a property already reported failed (its model can no longer
be trusted, and the verdict is a fail whatever follows).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from hypothesis import assume
from hypothesis.stateful import RuleBasedStateMachine

from graders.sandbox import Reply, Sandbox


@dataclass(frozen=True)
class Method:
    """One method of the interface: its name, parameters (without self) and contract."""
    name: str
    params: tuple[str, ...]
    doc: str
    returns: str = "None"

    def signature(self) -> str:
        return f"{self.name}({', '.join(('self',) + self.params)})"


@dataclass(frozen=True)
class Property:
    name: str      # kebab-case id shown in reports, e.g. "copy-on-write"
    summary: str   # one line: what must always hold


@dataclass(frozen=True)
class Exercise:
    name: str                       # CLI id, e.g. "block-allocator"
    question: str                   # catalogue id, e.g. "q43"
    title: str
    spec: str                       # the task as the candidate reads it (`grader show`)
    class_name: str
    methods: tuple[Method, ...]     # include "__init__" first
    properties: tuple[Property, ...]
    machine: type["GradedMachine"]  # drives the submission; checks are tagged by property
    home: Path                      # the exercise package dir (starter.py, mutants/)
    reference: Path                 # solutions/<module>.py
    default_examples: int = 100
    steps: int = 30                 # hypothesis stateful_step_count
    all_properties: tuple[Property, ...] = ()  # set by only(): every property checks report on
    excused: tuple[str, ...] = ()   # set by all_but(): treated as already failed, not reported
    steered: tuple[str, ...] = ()   # properties the machine generates differently for (its focus)
    paths: tuple[str, ...] = ()     # outcomes the spec names that a default run must reach
                                    # (GradedMachine.reach labels; `grader show --coverage`)

    @property
    def runs(self) -> tuple[tuple[Property, ...], ...]:
        """The properties that share each hypothesis run. Under one seed a machine that does
        not steer by its focus generates the same examples whatever the focus, so one run
        checks all those properties at once (every check is live); a steered property gets
        a run of its own."""
        shared = tuple(p for p in self.properties if p.name not in self.steered)
        alone = tuple((p,) for p in self.properties if p.name in self.steered)
        return ((shared,) if shared else ()) + alone

    @property
    def every_property(self) -> tuple[Property, ...]:
        """Every property of the exercise (a failed check is reported under its own, even
        when `only` left it out of the runs)."""
        return self.all_properties or self.properties

    @property
    def starter(self) -> Path:
        return self.home / "starter.py"

    def only(self, *names: str) -> "Exercise":
        """This exercise with runs for the named properties alone (a mutant's test needs just
        the one that must catch it). Every check stays live: a run that trips another
        property's check reports that property failed too."""
        every = self.every_property
        unknown = set(names) - {p.name for p in every}
        if unknown:
            raise ValueError(f"{self.name} has no property {', '.join(sorted(unknown))}")
        return replace(self, properties=tuple(p for p in every if p.name in names),
                       all_properties=every)

    def all_but(self, *names: str) -> "Exercise":
        """Runs for every property but the named ones, which are excused: an example that
        breaks one of them is dropped, not reported (a test of a design that fails them by
        choice, e.g. an engine that trusts its hash)."""
        graded = self.only(*(p.name for p in self.every_property if p.name not in names))
        return replace(graded, excused=tuple(names))

    @property
    def task(self) -> str:
        """The spec as `grader show` prints it: the exercise's own text, then the rule every
        exercise shares (a grader replays calls, so answers must not depend on chance)."""
        return self.spec.rstrip("\n") + "\n\n" + DETERMINISTIC

    def interface(self) -> str:
        lines = [f"class {self.class_name}:"]
        for m in self.methods:
            lines.append(f"    def {m.signature()}  # -> {m.returns}")
            lines.append(f"        {m.doc}")
        return "\n".join(lines)


DETERMINISTIC = """\
Your class must be deterministic: a new instance given the same calls gives the same answers
(the grader replays a failing sequence to shrink it). Seed any randomness you use, e.g.
random.Random(0) kept on the instance, and keep no state outside the instance. A class that
answers a replay differently gets no verdict on its properties, only this message.
"""

MIN_REACHED = 5   # a spec-named outcome a default run reaches fewer times than this is a hole


class PropertyFailure(AssertionError):
    """A tagged check failed while its property was the one being graded."""

    def __init__(self, prop: str, reason: str):
        super().__init__(reason)
        self.prop, self.reason = prop, reason


@dataclass
class Step:
    """One call in the transcript, for the repro script."""
    method: str | None      # None: the constructor
    args: tuple
    reply: Reply | None = None
    query: bool = False     # a read-only check the machine made, not a candidate action


@dataclass
class Transcript:
    steps: list[Step] = field(default_factory=list)


def shown_steps(steps: list[Step]) -> list[Step]:
    """The calls a repro shows: every action, and the read-only queries after the last one
    (where the check failed)."""
    last_action = max((i for i, s in enumerate(steps) if not s.query), default=-1)
    return [s for i, s in enumerate(steps) if not s.query or i > last_action]


class TooManyDropped(BaseException):
    """So many examples broke already-failed properties that this one cannot be judged.
    A BaseException so hypothesis stops at once instead of generating on."""


@dataclass
class RunStats:
    """What one hypothesis run saw: examples started and dropped, and the first failure."""
    started: int = 0
    dropped: int = 0                   # broke a property already reported failed (no pass)
    drop_limit: int = 1000             # more dropped than this: give up on the run
    first_failure: "PropertyFailure | None" = None
    reached: Counter = field(default_factory=Counter)   # coverage: label -> times reached
    # property -> (shown calls, steps, reason): the shortest failing transcript seen, which a
    # shrink stopped early (a cap, a limit) may not have replayed last
    shortest: dict = field(default_factory=dict)

    @property
    def valid(self) -> int:
        return self.started - self.dropped


class GradedMachine(RuleBasedStateMachine):
    """Base for property machines. The runner sets `sandbox`, `focus`, `transcript`,
    `failed` (properties already reported failed) and `stats`."""
    sandbox: Sandbox
    focus: str
    transcript: Transcript
    failed: frozenset = frozenset()
    excused: frozenset = frozenset()   # Exercise.all_but: dropped, not held against a pass
    stats: RunStats

    def __init__(self):
        super().__init__()
        self.transcript.steps = []
        self.stats.started += 1

    def reach(self, *labels: str) -> None:
        """Count a path the spec names (a refusal, an eviction...): `grader show --coverage`
        prints how often a default run reaches each, so a hole is visible."""
        for label in labels:
            self.stats.reached[label] += 1

    def send(self, calls: list[tuple[str, tuple, bool]]) -> list[Reply]:
        """One round trip: (method, args, read-only?) in order; all run, even after a raise.
        Each action's outcome is counted for coverage ("free: ok", "append: MemoryError")."""
        steps = [Step(m, tuple(a), query=q) for m, a, q in calls]
        self.transcript.steps.extend(steps)
        replies = self.sandbox.call_many([(m, list(a)) for m, a, _ in calls])
        for step, reply in zip(steps, replies):
            step.reply = reply
            if not step.query:
                self.stats.reached[f"{step.method}: {reply.raised or 'ok'}"] += 1
        return replies

    def construct(self, *args) -> Reply:
        self.transcript.steps.append(Step(None, args))
        reply = self.sandbox.new(list(args))
        self.transcript.steps[-1].reply = reply
        if reply.raised:
            raise PropertyFailure(self.focus, f"the constructor {reply.show()}")
        return reply

    def call(self, method: str, *args) -> Reply:
        return self.send([(method, args, False)])[0]

    def query(self, calls: list[tuple[str, tuple]]) -> list[Reply]:
        """Read-only calls batched into one round trip (invariant checks)."""
        return self.send([(m, a, True) for m, a in calls])

    def check(self, prop: str, ok: bool, reason: str) -> None:
        """Fail `prop`, whichever property this run grades. Only a property already reported
        failed drops the example instead (nothing is hidden: the verdict is a fail)."""
        if ok:
            return
        if prop in self.excused:
            assume(False)
        if prop in self.failed:
            self.stats.dropped += 1
            if self.stats.dropped > self.stats.drop_limit:
                raise TooManyDropped()
            assume(False)
        failure = PropertyFailure(prop, reason)
        if self.stats.first_failure is None:
            self.stats.first_failure = failure
        shown = len(shown_steps(self.transcript.steps))
        best = self.stats.shortest.get(prop)
        if best is None or shown < best[0]:
            self.stats.shortest[prop] = (shown, list(self.transcript.steps), reason)
        raise failure

    # exact comparisons: values cross as JSON, so a float is never an int and bool never is
    @staticmethod
    def is_int(value) -> bool:
        """True for an exact int: not a bool, not a float such as 3.0."""
        return type(value) is int

    @staticmethod
    def same(value, expected) -> bool:
        """Equal by value *and* type, all the way down (3.0 != 3, True != 1, [1] != [1.0])."""
        if type(value) is not type(expected):
            return False
        if type(value) in (list, tuple):
            return len(value) == len(expected) and all(
                GradedMachine.same(a, b) for a, b in zip(value, expected))
        if type(value) is dict:
            return value.keys() == expected.keys() and all(
                GradedMachine.same(value[k], expected[k]) for k in value)
        return value == expected

    # shape checks shared by exercises: values crossed as JSON, so types are exact
    def expect_int(self, prop: str, reply: Reply, what: str) -> int | None:
        self.check(prop, reply.raised is None, f"{what} {reply.show()}, expected an int")
        self.check(prop, self.is_int(reply.value), f"{what} returned {reply.value!r}, "
                   f"expected an int (not a bool, not a float)")
        return reply.value

    def expect_none(self, prop: str, reply: Reply, what: str) -> None:
        self.check(prop, reply.raised is None and reply.value is None,
                   f"{what} {reply.show() if reply.raised else 'returned ' + reply.show()}, "
                   "expected None")

    def expect_raises(self, prop: str, reply: Reply, exc: str, what: str) -> None:
        self.check(prop, reply.raised_builtin(exc),
                   f"{what} {reply.show() if reply.raised else 'returned ' + reply.show()}, "
                   f"expected it to raise {exc}")
