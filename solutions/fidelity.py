"""Predicted against measured where the fit never looked: H100 kernels (another GPU) and
published end-to-end serving runs. docs/fidelity.ipynb shows these; tests/test_calibration.py
pins them.

A kernel fit is tested on layer shapes it was not fitted on; the A100-to-H100 transfer error is
the A100 fit priced on the H100 against the H100 profiles.
"""

from __future__ import annotations

from solutions import calibration as cal
from solutions import fidelity_h100
from solutions.hardware import GPU, H100_SXM
from solutions.models import Model
from solutions.roofline import IDEAL
from solutions.step_defaults import H100_HELD_OUT_MODELS, HOPPER_FIT
from solutions.step_model import (ELEMENTWISE_PER_LAYER, GEMMS_PER_LAYER, KernelFit, elementwise_layer_cost,
                                  gemm_layer_cost)


def layer_time(model: Model, tokens: int, tp: int, fit: KernelFit, gpu: GPU) -> float:
    """One layer's four weight GEMMs and five elementwise kernels on one shard, as the step model
    prices them (attention excluded: the mlp.csv profiles do not hold it)."""
    return (cal.kernel_time(gemm_layer_cost(model, tokens, tp), fit.gemm, GEMMS_PER_LAYER, gpu)
            + cal.kernel_time(elementwise_layer_cost(model, tokens, tp), fit.elementwise, ELEMENTWISE_PER_LAYER, gpu))


def h100_points(fit: KernelFit = HOPPER_FIT, gpu: GPU = H100_SXM) -> list[cal.Point]:
    """Every H100 layer measurement (GEMMs + elementwise) beside its prediction under `fit`:
    "decode layer" up to calibration.DECODE_MAX_TOKENS tokens, "prefill layer" above; held out
    when its model is one the Hopper fit never saw."""
    out = []
    for r in fidelity_h100.LINEAR:
        model = cal.profiled_model(r.shape)
        out.append(cal.Point(
            kind="decode layer" if r.num_tokens <= cal.DECODE_MAX_TOKENS else "prefill layer",
            model=r.model, tp=r.tp, tokens=r.num_tokens, context_len=0,
            measured_s=(r.linear_total_ms + cal._elementwise_ms(r)) * 1e-3,
            naive_s=layer_time(model, r.num_tokens, r.tp, _ideal(), gpu),
            calibrated_s=layer_time(model, r.num_tokens, r.tp, fit, gpu),
            held_out=r.model in H100_HELD_OUT_MODELS, source=r.source))
    return out


def _ideal() -> KernelFit:
    return KernelFit(gemm=IDEAL, attention=IDEAL, elementwise=IDEAL, source="datasheet peaks, no floors")
