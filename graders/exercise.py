"""What an exercise is: a spec, an interface, and properties that drive a sandboxed class.

Adding an exercise means adding one package under ``graders/exercises/`` that defines
``EXERCISE = Exercise(...)``, with a ``starter.py`` and ``mutants/*.py`` beside it and a
reference solution in ``solutions/``. The engine needs no change.

A property is a hypothesis ``RuleBasedStateMachine`` subclass of :class:`GradedMachine`.
All of an exercise's properties may share one machine: each check is tagged with the
property it belongs to (``self.check("conservation", ok, why)``); when the runner grades
property P, a failed check of another property abandons that example instead (its model
can no longer be trusted), so each verdict names the invariant that actually broke.
"""

from __future__ import annotations

import re
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

    @property
    def starter(self) -> Path:
        return self.home / "starter.py"

    def mutants(self) -> list[Path]:
        return sorted((self.home / "mutants").glob("[!_]*.py"))

    def only(self, *names: str) -> "Exercise":
        """This exercise graded on the named properties alone (a mutant's test needs just the
        one that must catch it)."""
        unknown = set(names) - {p.name for p in self.properties}
        if unknown:
            raise ValueError(f"{self.name} has no property {', '.join(sorted(unknown))}")
        return replace(self, properties=tuple(p for p in self.properties if p.name in names))

    def all_but(self, *names: str) -> "Exercise":
        return self.only(*(p.name for p in self.properties if p.name not in names))

    def interface(self) -> str:
        lines = [f"class {self.class_name}:"]
        for m in self.methods:
            lines.append(f"    def {m.signature()}  # -> {m.returns}")
            lines.append(f"        {m.doc}")
        return "\n".join(lines)


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


class GradedMachine(RuleBasedStateMachine):
    """Base for property machines. The runner sets `sandbox`, `focus` and `transcript`."""
    sandbox: Sandbox
    focus: str
    transcript: Transcript

    def __init__(self):
        super().__init__()
        self.transcript.steps = []

    def construct(self, *args) -> Reply:
        self.transcript.steps.append(Step(None, args))
        reply = self.sandbox.new(list(args))
        self.transcript.steps[-1].reply = reply
        if reply.raised:
            raise PropertyFailure(self.focus, f"the constructor {reply.show()}")
        return reply

    def call(self, method: str, *args) -> Reply:
        step = Step(method, args)
        self.transcript.steps.append(step)
        step.reply = self.sandbox.call(method, *args)
        return step.reply

    def query(self, calls: list[tuple[str, tuple]]) -> list[Reply]:
        """Read-only calls batched into one round trip (invariant checks)."""
        steps = [Step(m, tuple(a), query=True) for m, a in calls]
        self.transcript.steps.extend(steps)
        replies = self.sandbox.call_many([(m, list(a)) for m, a in calls])
        for step, reply in zip(steps, replies):
            step.reply = reply
        return replies

    def check(self, prop: str, ok: bool, reason: str) -> None:
        """Fail `prop` if it is the one being graded; otherwise drop this example."""
        if ok:
            return
        if prop == self.focus:
            raise PropertyFailure(prop, reason)
        assume(False)

    # shape checks shared by exercises: values crossed as JSON, so types are exact
    def expect_int(self, prop: str, reply: Reply, what: str) -> int | None:
        self.check(prop, reply.raised is None, f"{what} {reply.show()}, expected an int")
        self.check(prop, type(reply.value) is int, f"{what} returned {reply.value!r}, "
                   f"expected an int (not bool, not a subclass)")
        return reply.value

    def expect_none(self, prop: str, reply: Reply, what: str) -> None:
        self.check(prop, reply.raised is None and reply.value is None,
                   f"{what} {reply.show() if reply.raised else 'returned ' + reply.show()}, "
                   "expected None")

    def expect_raises(self, prop: str, reply: Reply, exc: str, what: str) -> None:
        self.check(prop, reply.raised_builtin(exc),
                   f"{what} {reply.show() if reply.raised else 'returned ' + reply.show()}, "
                   f"expected it to raise {exc}")


def mutant_property(mutant: Path) -> str:
    """The property a mutant must fail on: the `Property: <name>` line of its docstring."""
    found = re.search(r"^Property: (\S+)", mutant.read_text(), re.M)
    if not found:
        raise ValueError(f"{mutant} names no 'Property: <name>' line")
    return found.group(1)
