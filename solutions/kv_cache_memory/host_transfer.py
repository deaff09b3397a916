"""How long moving KV between host memory and the GPU takes, when it is cut into many copies.

A copy costs a fixed submission overhead plus its bytes at the link's achievable rate. KV laid
out per layer and per block (vLLM's paged layout) is copied in units of
`block_size x kv_heads x head_dim x dtype` bytes, one unit per layer, K and V apart, so a
transfer is thousands of small copies and the overhead, not the link, can set its speed.
"""

from __future__ import annotations

# Per-call cost of submitting one cudaMemcpyAsync: "approximately 5-7 us" measured for many small
# copies (Wu et al., DualPath, arXiv:2602.21548, section 5.2); 3.5-4.0 us per call for 1 B to 64 KB
# copies on an H100 (meta-pytorch/torchcomms PR 2195's benchmark, NVLink transport). 5 us is taken.
COPY_CALL_OVERHEAD_S = 5e-6
# Large pinned copies reach about 78% of a PCIe link's nominal one-way rate: 25 GB/s of 32 measured
# on an A100's Gen4 x16 ("it is measured peak", ZaidQureshi/bam issue 54, the BaM paper's figure).
PCIE_DMA_EFFICIENCY = 25 / 32
SOURCES = ("DualPath (arXiv:2602.21548) section 5.2; meta-pytorch/torchcomms PR 2195; "
           "ZaidQureshi/bam issue 54 (BaM: A100 PCIe Gen4 x16, 25 of 32 GB/s)")


def copy_seconds(total_bytes: float, copy_bytes: float, link_bytes_per_s: float,
                 overhead_s: float = COPY_CALL_OVERHEAD_S, efficiency: float = PCIE_DMA_EFFICIENCY) -> float:
    """Time to move `total_bytes` as copies of `copy_bytes` each, submitted one after another."""
    for name, value in (("total_bytes", total_bytes), ("copy_bytes", copy_bytes),
                        ("link_bytes_per_s", link_bytes_per_s)):
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value}")
    if overhead_s < 0 or not 0 < efficiency <= 1:
        raise ValueError(f"need overhead_s >= 0 and 0 < efficiency <= 1, got {overhead_s}, {efficiency}")
    copies = -(-total_bytes // copy_bytes)
    return copies * overhead_s + total_bytes / (link_bytes_per_s * efficiency)


def effective_bandwidth(copy_bytes: float, link_bytes_per_s: float, overhead_s: float = COPY_CALL_OVERHEAD_S,
                        efficiency: float = PCIE_DMA_EFFICIENCY) -> float:
    """Bytes per second actually moved when every copy is `copy_bytes` long."""
    return copy_bytes / copy_seconds(copy_bytes, copy_bytes, link_bytes_per_s, overhead_s, efficiency)
