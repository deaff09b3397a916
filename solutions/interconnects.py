"""Links between GPUs beyond what one datasheet line says: collective bandwidths measured at large
messages, InfiniBand port rates, and cross-node small-message latencies, each with its source.

The step model's default all-reduce (`solutions.step_defaults.HOPPER_NVLINK`) is a fit to vLLM's
custom all-reduce on messages up to 1 MiB: right for decode messages, pessimistic for the
megabytes a large batch or a prefill moves. The figures here bound that from the other side and
price links that leave the node. Units: bytes/s (decimal), seconds.
"""

from __future__ import annotations

from solutions.step_model import Interconnect
from solutions.units import GB, US

# NCCL all-reduce bus bandwidth at large messages, 8x H100 SXM5, NVLink 4 + NVSwitch, single node.
NVLINK_H100_NCCL_LARGE_BUSBW = 460 * GB
NVLINK_H100_NCCL_LARGE_BUSBW_SOURCE = (
    "docs.alayanew.com/en/docs/tech-blog/2026-05-06-nccl-tests, nccl-tests reference table: "
    "8xH100 SXM5 NVLink-only busbw 460-480 GB/s at large sizes (lower end used)")

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


def nccl_large_message_nvlink(latency_s: float) -> Interconnect:
    """An NVLink all-reduce with the measured large-message NCCL bus bandwidth and the given
    per-collective latency: the optimistic end for megabyte messages."""
    return Interconnect(latency_s=latency_s, bus_bytes_per_s=NVLINK_H100_NCCL_LARGE_BUSBW,
                        source=f"latency given; bus bandwidth {NVLINK_H100_NCCL_LARGE_BUSBW_SOURCE}")


def cross_node(latency_s: float = CROSS_NODE_SMALL_ALLREDUCE_NCCL_MODEL_S) -> Interconnect:
    """A 16-GPU (two-node) all-reduce: cross-node latency and the measured large-message bus
    bandwidth over NVLink + NDR."""
    return Interconnect(latency_s=latency_s, bus_bytes_per_s=CROSS_NODE_H100_NDR_NCCL_LARGE_BUSBW,
                        source=f"{CROSS_NODE_SMALL_ALLREDUCE_SOURCE}; {CROSS_NODE_H100_NDR_NCCL_LARGE_BUSBW_SOURCE}")
