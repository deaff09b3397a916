"""Pipeline pricing: stages cover every layer, one stage equals the TP step, the pipeline's token
latency grows with the stages while its cycle shrinks, and bad input is refused."""

import pytest

from solutions.hardware import H100_SXM
from solutions.models import LLAMA_3_1_405B, LLAMA_3_3_70B
from solutions.parallelism_kernels.parallelism import pipeline_decode, stage_layers
from solutions.step_model import FP8, StepModel


@pytest.mark.parametrize("layers,stages", [(126, 8), (80, 3), (5, 5), (7, 1)])
def test_stage_layers_cover_every_layer_evenly(layers, stages):
    split = stage_layers(layers, stages)
    assert sum(split) == layers and len(split) == stages and max(split) - min(split) <= 1


def test_one_stage_is_the_tensor_parallel_step():
    pipe = pipeline_decode(LLAMA_3_3_70B, H100_SXM, 1, 16, 1000, tp=4)
    step = StepModel.of(LLAMA_3_3_70B, H100_SXM, tp=4).decode(16, 1000)
    assert pipe.token_latency_s == pytest.approx(step.seconds, rel=1e-9)


def test_more_stages_cost_latency_and_shorten_the_cycle():
    runs = [pipeline_decode(LLAMA_3_1_405B, H100_SXM, p, 4, 2000, FP8) for p in (2, 4, 8)]
    assert runs[0].token_latency_s < runs[1].token_latency_s < runs[2].token_latency_s
    assert runs[0].cycle_s > runs[1].cycle_s > runs[2].cycle_s


@pytest.mark.parametrize("kwargs", [dict(stages=0), dict(stages=127), dict(microbatch=0)])
def test_bad_arguments_are_refused(kwargs):
    args = dict(model=LLAMA_3_1_405B, gpu=H100_SXM, stages=2, microbatch=1, context_len=100) | kwargs
    with pytest.raises(ValueError):
        pipeline_decode(**args)
