"""Links between GPUs beyond what one datasheet line says: collective bandwidths measured at large
messages, InfiniBand port rates, and cross-node small-message latencies, each with its source.

The step model's default all-reduce (`solutions.step_defaults.HOPPER_NVLINK`) is a fit to vLLM's
custom all-reduce on messages up to 1 MiB, switching to NCCL's ring bandwidth from 8 MiB (vLLM's
custom all-reduce cap). `nccl_large_message_nvlink` prices every message at that ring bandwidth,
the optimistic end for the 1-8 MiB messages of a large decode batch; the other figures price links
that leave the node. Units: bytes/s (decimal), seconds.
"""

from __future__ import annotations

from solutions.step_model import Interconnect
from solutions.units import GB, US

# InfiniBand NDR: 400 Gb/s per port and direction; an HGX H100 node has one NDR port per GPU.
INFINIBAND_NDR_PORT_BYTES_PER_S = 400e9 / 8
INFINIBAND_NDR_SOURCE = "InfiniBand NDR rate 400 Gb/s per port (ConnectX-7 / Quantum-2); 8 ports per HGX node"

# NCCL all-reduce bus bandwidth at large messages across nodes: 8x H100 per node, NVLink inside,
# 8x NDR between nodes.
CROSS_NODE_H100_NDR_NCCL_LARGE_BUSBW = 400 * GB
CROSS_NODE_H100_NDR_NCCL_LARGE_BUSBW_SOURCE = (
    "saturncloud.io/blog/crusoe-nccl-cluster-validation, expected all_reduce bus bandwidth for large "
    "messages (8 GB+): H100 SXM, NVLink + IB NDR, 400-450 GB/s (lower end used)")

# Cross-node all-reduce latency for a tiny message: NCCL's own tuning model on an H100 + IB cluster
# (the time it predicts for 128 bytes with its fastest algorithm and protocol), and what that
# cluster measured.
CROSS_NODE_SMALL_ALLREDUCE_NCCL_MODEL_S = 25.2 * US
CROSS_NODE_SMALL_ALLREDUCE_MEASURED_S = 61.6 * US
CROSS_NODE_SMALL_ALLREDUCE_SOURCE = (
    "NVIDIA/nccl issue 1453 (H100 cluster, IB): NCCL_DEBUG tuning log '128 Bytes -> Algo 0 proto 0 "
    "time 25.214764' and an all_reduce_perf row of 61.58 us for a small message")


def nccl_large_message_nvlink(latency_s: float, gpu=None) -> Interconnect:
    """An NVLink all-reduce priced at NCCL's ring bandwidth for every message size (the step
    model's large-message figure, `step_defaults.NCCL_RING_FRACTION_OF_NVLINK` of one NVLink
    direction) with the given per-collective latency: the optimistic end for megabyte messages."""
    from solutions.hardware import H100_SXM
    from solutions.step_defaults import NCCL_RING_FRACTION_OF_NVLINK

    gpu = H100_SXM if gpu is None else gpu
    bus = NCCL_RING_FRACTION_OF_NVLINK * gpu.nvlink_unidir_bytes_per_s
    return Interconnect(latency_s=latency_s, bus_bytes_per_s=bus,
                        source=f"latency given; NCCL ring bandwidth {bus / GB:.0f} GB/s (solutions.step_defaults)")


def cross_node(latency_s: float = CROSS_NODE_SMALL_ALLREDUCE_NCCL_MODEL_S) -> Interconnect:
    """A 16-GPU (two-node) all-reduce: cross-node latency and the measured large-message bus
    bandwidth over NVLink + NDR."""
    return Interconnect(latency_s=latency_s, bus_bytes_per_s=CROSS_NODE_H100_NDR_NCCL_LARGE_BUSBW,
                        source=f"{CROSS_NODE_SMALL_ALLREDUCE_SOURCE}; {CROSS_NODE_H100_NDR_NCCL_LARGE_BUSBW_SOURCE}")
