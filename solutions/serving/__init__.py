"""A step-level simulator of one LLM serving replica: continuous batching, chunked prefill, a KV
block pool with recompute preemption, step times from the kit's one step model.

    from solutions.serving import Replica, Workload, Poisson, LogNormal, SLO, simulate
    replica = Replica.of(LLAMA_3_1_8B, H100_SXM)
    work = Workload.generate(10_000, Poisson(rate=20), prompt=LogNormal(1000, 1.0), output=LogNormal(200, 1.0))
    result = simulate(work, replica)
    result.summary(SLO(ttft_s=0.5, tpot_s=0.05))

Validated against Little's law, the M/M/1, M/D/1 and M/G/1 closed forms, and the kit's
throughput-versus-batch curve: see tests/test_serving.py and docs/simulator.ipynb.
"""

from solutions.serving.distributions import Empirical, Exponential, Fixed, Gamma, LogNormal, Uniform
from solutions.serving.kv_pool import KVPool
from solutions.serving.metrics import SLO, Result
from solutions.serving.queueing import lindley_waits, md1_wait, mg1_wait, mm1_wait
from solutions.serving.replica import Replica, simulate
from solutions.serving.step_scheduler import FCFSScheduler, SchedulerConfig, StepPlan
from solutions.serving.step_time import ServiceTime, StepShape
from solutions.serving.workload import GammaArrivals, OnOff, Poisson, Trace, Workload

__all__ = [
    "Empirical", "Exponential", "Fixed", "Gamma", "LogNormal", "Uniform", "KVPool", "SLO", "Result",
    "lindley_waits", "md1_wait", "mg1_wait", "mm1_wait", "Replica", "simulate", "FCFSScheduler",
    "SchedulerConfig", "StepPlan", "ServiceTime", "StepShape", "GammaArrivals", "OnOff",
    "Poisson", "Trace", "Workload",
]
