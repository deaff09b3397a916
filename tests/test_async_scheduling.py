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


# ---- vLLM 0.33.0's resolution of async scheduling (the rule q16 and q55 both state) ----------------
from solutions.engine_internals.async_scheduling import (SPEC_METHODS, V1_ASYNC_SPEC_METHODS,  # noqa: E402
                                        model_runner, resolve_async_scheduling)


def test_ngram_keeps_async_on_the_default_runner_and_loses_it_on_v1():
    on = resolve_async_scheduling("ngram")
    assert (on.runner, on.enabled) == ("v2", True)
    off = resolve_async_scheduling("ngram", use_v2_env=False)
    assert (off.runner, off.enabled) == ("v1", False) and "ngram" in off.reason
    with pytest.raises(ValueError):
        resolve_async_scheduling("ngram", use_v2_env=False, requested=True)


@pytest.mark.parametrize("method", SPEC_METHODS)
def test_every_method_keeps_async_on_v2_and_only_the_listed_ones_on_v1(method):
    v1 = resolve_async_scheduling(method, use_v2_env=False)
    assert v1.enabled == (method in V1_ASYNC_SPEC_METHODS)
    if model_runner(method) == "v2":
        assert resolve_async_scheduling(method).enabled
    else:  # suffix, custom_class: V2 lacks them, the fallback runner cannot overlap them
        assert not resolve_async_scheduling(method).enabled


def test_pipeline_parallel_and_pooling():
    assert resolve_async_scheduling(pipeline_parallel=2).enabled
    assert not resolve_async_scheduling(pipeline_parallel=2, use_v2_env=False).enabled
    assert not resolve_async_scheduling(pooling=True).enabled
    with pytest.raises(ValueError):
        resolve_async_scheduling("medusa")
