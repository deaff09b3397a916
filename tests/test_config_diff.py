"""The resolved-config diff: parses vLLM's config text (nested brackets, quotes, JSON), lists
changes relevant-first, refuses truncated text, and config bisection reverts one key at a time."""

import pytest

from solutions.engine_internals.config_diff import diff, parse_engine_config, revert_one_at_a_time

LINE = ("INFO core.py:61] Initializing a V1 LLM engine (v0.0.0) with config: model='m', "
        "dtype=torch.float16, max_seq_len=512, decoding_config=DecodingConfig(backend='x', y=None), "
        "enable_prefix_caching=True, gpu_memory_utilization=0.9, "
        'compilation_config={"level":3,"splitting_ops":["a","b"]}')


def test_parse_keeps_nested_values_whole_and_flattens_json():
    cfg = parse_engine_config(LINE)
    assert cfg["model"] == "m" and cfg["max_seq_len"] == 512 and cfg["enable_prefix_caching"] is True
    assert cfg["decoding_config"] == "DecodingConfig(backend='x', y=None)"
    assert cfg["gpu_memory_utilization"] == 0.9
    assert cfg["compilation_config.level"] == 3 and cfg["compilation_config.splitting_ops"] == ["a", "b"]


def test_diff_lists_relevant_changes_first():
    old = parse_engine_config(LINE)
    new = dict(old, model="other", enable_prefix_caching=False, extra=1)
    changes = diff(old, new)
    assert [c.key for c in changes] == ["enable_prefix_caching", "extra", "model"]
    assert changes[0].relevant and not changes[1].relevant and changes[1].old is None


@pytest.mark.parametrize("text", ["no equals here", 'a=1, b={"x": [1, 2', "a=(1, b=2"])
def test_malformed_or_truncated_text_is_refused(text):
    with pytest.raises(ValueError):
        parse_engine_config(text)


def test_revert_one_at_a_time_finds_the_key_that_matters():
    old, new = {"a": 1, "b": 1, "c": 1}, {"a": 2, "b": 2, "c": 1}
    results = revert_one_at_a_time(old, new, measure=lambda cfg: 100 - 10 * (cfg["b"] - 1))
    assert results == {"old": 100, "new": 90, "a": 90, "b": 100}
