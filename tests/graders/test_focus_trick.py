"""The focus trick (issue 20, item 0) cannot pass.

Under the old runner each property was its own hypothesis run and a failed check of another
property only dropped the example, so a submission that recognised each run's first (the
simplest) example, counted runs to learn which property was being graded, and broke a check
of some other property in every other example scored full marks (10/10 on the scheduler).
Every check is now live in every run, so the same file fails, on every seed.
"""

import re

import pytest

from graders import registry, runner


def disguised(reference: str, class_name: str, wrapper: str) -> str:
    """The reference renamed to _Real, followed by a `class_name` that wraps it."""
    real = re.sub(rf"\bclass {class_name}\b", "class _Real", reference)
    return real + "\n\n" + wrapper


# Correct in BlockAllocator(1) examples (the run's first is BlockAllocator(1) then allocate x30,
# counted as a new run at the third allocate); everywhere else a query answers garbage that
# breaks a property other than the one being graded, before any of its checks can fail.
ALLOCATOR = '''
PROPS = ("conservation", "exclusive-allocation", "refcounts", "copy-on-write")
RUNS = [0]

class BlockAllocator:
    def __init__(self, num_blocks):
        self.real, self.watched, self.calls = _Real(num_blocks), num_blocks == 1, []

    def _focus(self):
        return PROPS[max(0, RUNS[0] - 1) % len(PROPS)]

    def allocate(self):
        self.calls.append("allocate")
        if self.watched and self.calls == ["allocate"] * 3:
            RUNS[0] += 1  # the simplest example: a new run has started
        return self.real.allocate()

    def fork(self, table):
        self.calls.append("fork")
        return self.real.fork(table)

    def free(self, block):
        self.calls.append("free")
        return self.real.free(block)

    def copy_on_write(self, block):
        self.calls.append("cow")
        return self.real.copy_on_write(block)

    def refcount(self, block):
        if not self.watched and self._focus() == "conservation" and block == 0:
            return -1  # breaks refcounts, checked before conservation's sum
        return self.real.refcount(block)

    def free_count(self):
        if not self.watched and self._focus() != "conservation":
            return -1  # breaks conservation
        return self.real.free_count()
'''

# Correct in the run's first example (the all-minimal configuration and two minimal arrivals,
# recognised at the first schedule()); elsewhere schedule() names a request that does not exist
# (one-queue), or, while one-queue is graded, schedules nothing at all (progress).
SCHEDULER = '''
PROPS = ("budget", "kv-capacity", "one-queue", "decodes-first", "resume-first", "fcfs",
         "victim-newest", "no-lost-output", "progress", "bounded-finish")
RUNS = [0]

class Scheduler:
    def __init__(self, token_budget, max_seqs, num_blocks, block_size, preemption):
        args = (token_budget, max_seqs, num_blocks, block_size, preemption)
        self.simplest = args == (2, 2, 2, 2, "recompute")
        self.arrivals, self.watched = [], None
        self.real = _Real(*args)

    def add_request(self, request_id, prompt_len, max_tokens):
        self.arrivals.append((request_id, prompt_len, max_tokens))
        return self.real.add_request(request_id, prompt_len, max_tokens)

    def schedule(self):
        if self.watched is None:
            self.watched = self.simplest and self.arrivals == [(0, 3, 1), (1, 3, 1)]
            RUNS[0] += self.watched
        plan = self.real.schedule()
        if self.watched:
            return plan
        if PROPS[max(0, RUNS[0] - 1) % len(PROPS)] == "one-queue":
            return {"prefill": [], "decode": [], "preempted": []}
        return {"prefill": [[10 ** 6, 1]], "decode": [], "preempted": []}

    def update(self, eos):
        return self.real.update(eos)

    def queues(self):
        return self.real.queues()
'''

CASES = {"block-allocator": ("BlockAllocator", ALLOCATOR),
         "scheduler": ("Scheduler", SCHEDULER)}


def trick(name):
    exercise = registry.get(name)
    class_name, wrapper = CASES[name]
    return exercise, disguised(exercise.reference.read_text(), class_name, wrapper)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_focus_trick_fails_on_every_seed(name, seed):
    exercise, source = trick(name)
    verdict = runner.grade(exercise, source, "trick.py", seed=seed, shrink=False,
                           stop_at_first_failure=True)
    assert verdict.exit_status == 1, [(p.name, p.outcome, p.reason) for p in verdict.properties]
    assert verdict.failed and all(not verdict.result(n).reason.startswith("sandbox")
                                  for n in verdict.failed)


def test_the_trick_is_correct_where_it_is_watched():
    """Not a broken file: graded on its watched examples alone it would pass, so the verdict
    above comes from the examples it ran while unwatched."""
    exercise, source = trick("block-allocator")
    watched_only = source.replace("num_blocks == 1", "True")
    verdict = runner.grade(exercise, watched_only, "trick.py", examples=10)
    assert verdict.passed, [(p.name, p.reason) for p in verdict.properties]


def test_no_property_passes_on_the_few_examples_left():
    """Graded to the end: the properties the trick breaks fail, and the others cannot pass on
    the few examples it runs correctly (a pass needs min_valid clean examples)."""
    exercise, source = trick("block-allocator")
    verdict = runner.grade(exercise, source, "trick.py", examples=20, shrink=False)
    assert not any(p.passed for p in verdict.properties), \
        [(p.name, p.outcome, p.examples) for p in verdict.properties]
    assert {p.outcome for p in verdict.properties} <= {runner.FAIL, runner.UNCHECKED}
