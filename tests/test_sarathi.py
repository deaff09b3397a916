"""The Sarathi-Serve setting in the kit: the model's size and the trace summary hang together."""

import numpy as np

from solutions.models import MISTRAL_7B
from solutions.scheduling_latency.sarathi import SHAREGPT_OUTPUT_PERCENTILES, SHAREGPT_PROMPT_PERCENTILES, sharegpt_lengths


def test_mistral_7b_parameter_count_matches_its_name():
    # 7.24B: 32 layers of GQA attention and a 14,336-wide SwiGLU MLP, plus two 32,000-row embeddings
    assert 7.1e9 < MISTRAL_7B.params < 7.4e9


def test_trace_percentiles_are_sorted_and_within_the_trace_limits():
    for values, cap in ((SHAREGPT_PROMPT_PERCENTILES, 8192), (SHAREGPT_OUTPUT_PERCENTILES, 1024)):
        assert len(values) == 100
        assert np.all(np.diff(values) >= 0)
        assert 0 < values[0] and values[-1] <= cap


def test_resampled_lengths_have_the_trace_means():
    prompt, output = sharegpt_lengths()
    rng = np.random.default_rng(0)
    assert abs(prompt.sample(20_000, rng).mean() / prompt.mean - 1) < 0.03
    assert output.mean < prompt.mean  # ShareGPT prompts are longer than answers on average
