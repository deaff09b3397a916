"""The placeholder replay: exactly one wasted slot per end-of-sequence stop under async
scheduling, none at max_tokens, and a stop string costs the abort's delay (plus one when async)."""

import pytest
from hypothesis import given, settings, strategies as st

from solutions.engine_internals.async_scheduling import replay

FIXED = settings(database=None, derandomize=True, max_examples=60, deadline=None)
sizes = st.integers(1, 50)


@given(sizes, sizes)
@FIXED
def test_sync_scheduling_wastes_nothing_at_eos_or_max_tokens(prompt, output):
    for ending in ("eos", "max_tokens"):
        r = replay(prompt, output, ending, "sync")
        assert (r.wasted, r.steps) == (0, output)


@given(sizes, sizes)
@FIXED
def test_async_wastes_one_slot_at_eos_and_none_at_max_tokens(prompt, output):
    assert replay(prompt, output, "eos", "async").wasted == 1
    assert replay(prompt, output, "max_tokens", "async").wasted == 0


@given(sizes, sizes, st.integers(1, 5))
@FIXED
def test_stop_string_costs_the_abort_delay(prompt, output, delay):
    assert replay(prompt, output, "stop_string", "sync", delay).wasted == delay
    assert replay(prompt, output, "stop_string", "async", delay).wasted == delay + 1


@pytest.mark.parametrize("kwargs,message", [
    (dict(prompt=0, output=3), "prompt"), (dict(prompt=3, output=3, ending="length"), "ending"),
    (dict(prompt=3, output=3, mode="overlap"), "mode"), (dict(prompt=3, output=2.5), "output")])
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        replay(**kwargs)
