"""The two pictures the scheduling answers draw from a run: a step timeline (prefill chunks
against decodes, each bar as wide as its step) and latency distributions against an SLO."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

from solutions.serving.metrics import SLO, Result


def plot_step_timeline(result: Result, t0_s: float | None = None, t1_s: float | None = None,
                       budget: int | None = None, axes=None):
    """Top: tokens per step, decode (blue) and prefill chunk (orange) stacked, over time (ms).
    Bottom: each step's duration, which is every running decode's inter-token gap."""
    s = result.steps
    keep = np.ones(s["start_s"].size, bool)
    if t0_s is not None:
        keep &= s["start_s"] >= t0_s
    if t1_s is not None:
        keep &= s["start_s"] < t1_s
    if not keep.any():
        raise ValueError("no step starts inside [t0_s, t1_s)")
    start = s["start_s"][keep] * 1e3
    width = (s["end_s"][keep] - s["start_s"][keep]) * 1e3
    decode, prefill = s["decode_tokens"][keep], s["prefill_tokens"][keep]
    if axes is None:
        _, axes = plt.subplots(2, 1, figsize=(8, 5), sharex=True, height_ratios=(2, 1))
    top, bottom = axes
    top.bar(start, decode, width=width, align="edge", color="tab:blue", edgecolor="white", linewidth=0.5,
            label="decode tokens")
    top.bar(start, prefill, width=width, align="edge", bottom=decode, color="tab:orange", edgecolor="white",
            linewidth=0.5, label="prefill chunk tokens")
    if budget is not None:
        top.axhline(budget, color="gray", ls="--", lw=1, label="token budget")
    top.set_ylabel("tokens in the step")
    top.grid(alpha=0.3)
    bottom.step(np.r_[start, start[-1] + width[-1]], np.r_[width, width[-1]], where="post", color="tab:red")
    bottom.set_ylabel("step = ITL (ms)")
    bottom.set_xlabel("time (ms)")
    bottom.grid(alpha=0.3)
    return axes


def plot_latency_histograms(result: Result, slo: SLO | None = None, axes=None):
    """TTFT, TPOT and ITL histograms (log-spaced bins, ms) with p50, p99 and the SLO targets."""
    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    slo = slo or SLO()
    panels = [(result.ttft, "TTFT", slo.ttft_s), (result.tpot, "TPOT", slo.tpot_s), (result.itl, "ITL", None)]
    for ax, (values, label, target) in zip(axes, panels):
        values = values[~np.isnan(values)] * 1e3
        if values.size == 0:
            ax.set_title(f"{label}: no values")
            continue
        low = max(values.min(), 1e-3)
        bins = np.geomspace(low, max(values.max(), low * 1.01), 60)
        ax.hist(values, bins=bins, color="tab:blue", alpha=0.8)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(f"{label} (ms)")
        ax.grid(alpha=0.3)
        for p, style in ((50, "-"), (99, "--")):
            ax.axvline(np.percentile(values, p), color="black", ls=style, lw=1, label=f"p{p}")
        if target:
            ax.axvline(target * 1e3, color="tab:red", lw=1.5, label="SLO")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("requests")
    axes[2].set_ylabel("token gaps")
    return axes
