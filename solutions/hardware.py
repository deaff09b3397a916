"""Accelerators, as their datasheets state them: dense (not sparse) peaks, decimal units.

Every figure has a source. Rates are peak datasheet numbers; what a kernel really achieves is
a separate, named efficiency factor (see `solutions.roofline.Efficiency`), never folded in here.

Units: `*_gb` is decimal gigabytes (1e9 bytes), `*_gb_s` decimal GB/s, `*_tflops` 1e12 FLOP/s.
NVLink and PCIe figures are the *bidirectional* aggregate NVIDIA prints; one direction is half.
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions.units import GB, TFLOP

DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}


@dataclass(frozen=True)
class GPU:
    name: str
    bf16_dense_tflops: float
    fp8_dense_tflops: float | None  # None: no FP8 tensor cores (A100)
    hbm_capacity_gb: float
    hbm_bandwidth_gb_s: float
    nvlink_bidir_gb_s: float | None  # None: no NVLink (PCIe card)
    pcie_bidir_gb_s: float
    source: str
    int8_dense_tops: float | None = None  # INT8 tensor-core peak, dense (None: not given here)

    def peak_flops(self, dtype: str = "bf16") -> float:
        """Dense tensor-core FLOP/s for a matmul whose inputs are `dtype`."""
        if dtype in ("bf16", "fp16"):
            return self.bf16_dense_tflops * TFLOP
        if dtype == "fp8":
            if self.fp8_dense_tflops is None:
                raise ValueError(f"{self.name} has no FP8 tensor cores")
            return self.fp8_dense_tflops * TFLOP
        if dtype == "int8":
            if self.int8_dense_tops is None:
                raise ValueError(f"{self.name}: no INT8 tensor-core peak in the kit")
            return self.int8_dense_tops * TFLOP  # tera-operations: one multiply-add is 2 ops, as for FLOPs
        raise ValueError(f"no peak for dtype {dtype!r}; use 'bf16', 'fp16', 'fp8' or 'int8'")

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.hbm_bandwidth_gb_s * GB

    @property
    def hbm_capacity_bytes(self) -> float:
        return self.hbm_capacity_gb * GB

    @property
    def nvlink_unidir_bytes_per_s(self) -> float:
        if self.nvlink_bidir_gb_s is None:
            raise ValueError(f"{self.name} has no NVLink")
        return self.nvlink_bidir_gb_s * GB / 2

    @property
    def pcie_unidir_bytes_per_s(self) -> float:
        return self.pcie_bidir_gb_s * GB / 2

    def ridge_flop_per_byte(self, dtype: str = "bf16") -> float:
        """Arithmetic intensity at which compute time equals HBM time."""
        return self.peak_flops(dtype) / self.hbm_bytes_per_s


A100_80GB_SXM = GPU(
    name="A100 80GB SXM",
    bf16_dense_tflops=312.0,
    fp8_dense_tflops=None,
    hbm_capacity_gb=80.0,
    hbm_bandwidth_gb_s=2039.0,
    nvlink_bidir_gb_s=600.0,
    pcie_bidir_gb_s=64.0,  # PCIe Gen4 x16
    source="NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): "
    "BF16 312 TFLOPS dense (624 with sparsity), 80GB HBM2e at 2,039 GB/s, NVLink 600 GB/s, PCIe Gen4 64 GB/s; "
    "INT8 624 TOPS dense (1,248 with sparsity)",
    int8_dense_tops=624.0,
)

A100_80GB_PCIE = GPU(
    name="A100 80GB PCIe",
    bf16_dense_tflops=312.0,
    fp8_dense_tflops=None,
    hbm_capacity_gb=80.0,
    hbm_bandwidth_gb_s=1935.0,
    nvlink_bidir_gb_s=600.0,  # NVLink bridge between pairs of cards
    pcie_bidir_gb_s=64.0,  # PCIe Gen4 x16
    source="NVIDIA A100 Tensor Core GPU datasheet, A100 80GB PCIe column: BF16 312 TFLOPS dense, "
    "80GB HBM2e at 1,935 GB/s, NVLink bridge 600 GB/s, PCIe Gen4 64 GB/s; "
    "INT8 624 TOPS dense",
    int8_dense_tops=624.0,
)

H100_SXM = GPU(
    name="H100 SXM",
    bf16_dense_tflops=989.4,
    fp8_dense_tflops=1978.9,
    hbm_capacity_gb=80.0,
    hbm_bandwidth_gb_s=3350.0,
    nvlink_bidir_gb_s=900.0,
    pcie_bidir_gb_s=128.0,  # PCIe Gen5 x16
    source="NVIDIA H100 Tensor Core GPU Architecture whitepaper, Table 3 (H100 SXM5: BF16 989.4 dense / 1978.9 sparse "
    "TFLOPS, FP8 1978.9 dense); NVIDIA H100 datasheet: 80GB HBM3 at 3.35 TB/s, NVLink 900 GB/s, PCIe Gen5 128 GB/s; "
    "INT8 3,958 TOPS with sparsity (1,978.9 dense)",
    int8_dense_tops=1978.9,
)

H100_PCIE = GPU(
    name="H100 PCIe",
    bf16_dense_tflops=756.0,
    fp8_dense_tflops=1513.0,
    hbm_capacity_gb=80.0,
    hbm_bandwidth_gb_s=2000.0,
    nvlink_bidir_gb_s=600.0,  # NVLink bridge between pairs of cards
    pcie_bidir_gb_s=128.0,  # PCIe Gen5 x16
    source="NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column: BF16 1,513 / FP8 3,026 TFLOPS with sparsity "
    "(dense is half), 80GB HBM2e at 2 TB/s, NVLink bridge 600 GB/s, PCIe Gen5 128 GB/s; "
    "INT8 3,026 TOPS with sparsity (1,513 dense)",
    int8_dense_tops=1513.0,
)

H200_SXM = GPU(
    name="H200 SXM",
    bf16_dense_tflops=989.4,
    fp8_dense_tflops=1978.9,
    hbm_capacity_gb=141.0,
    hbm_bandwidth_gb_s=4800.0,
    nvlink_bidir_gb_s=900.0,
    pcie_bidir_gb_s=128.0,  # PCIe Gen5 x16
    source="NVIDIA H200 Tensor Core GPU datasheet: 141GB HBM3e at 4.8 TB/s, BF16 1,979 / FP8 3,958 TFLOPS with "
    "sparsity (dense is half, the same Hopper die as H100 SXM), NVLink 900 GB/s, PCIe Gen5 128 GB/s; "
    "INT8 3,958 TOPS with sparsity (1,978.9 dense)",
    int8_dense_tops=1978.9,
)

B200 = GPU(
    name="B200",
    bf16_dense_tflops=2250.0,
    fp8_dense_tflops=4500.0,
    hbm_capacity_gb=180.0,
    hbm_bandwidth_gb_s=7700.0,
    nvlink_bidir_gb_s=1800.0,
    pcie_bidir_gb_s=128.0,  # PCIe Gen5 x16 host link
    source="NVIDIA HGX B200 specifications (per GPU, 8-GPU board): FP8 4.5 PFLOPS and BF16 2.25 PFLOPS dense "
    "(half the sparse 9 / 4.5), 180GB HBM3e (1.44 TB per board), 7.7 TB/s (62 TB/s per board), "
    "NVLink 5 1.8 TB/s per GPU",
)

L40S = GPU(
    name="L40S",
    bf16_dense_tflops=362.05,
    fp8_dense_tflops=733.0,
    hbm_capacity_gb=48.0,  # GDDR6, not HBM; the field name keeps one vocabulary for "device memory"
    hbm_bandwidth_gb_s=864.0,
    nvlink_bidir_gb_s=None,
    pcie_bidir_gb_s=64.0,  # PCIe Gen4 x16
    source="NVIDIA L40S datasheet: BF16 362.05 / 733 TFLOPS (dense / sparse), FP8 733 / 1,466, "
    "48GB GDDR6 at 864 GB/s, PCIe Gen4 x16 64 GB/s, no NVLink; "
    "INT8 733 / 1,466 TOPS (dense / sparse)",
    int8_dense_tops=733.0,
)

GPUS = {g.name: g for g in (A100_80GB_SXM, A100_80GB_PCIE, H100_SXM, H100_PCIE, H200_SXM, B200, L40S)}

# Streaming multiprocessors: how many thread blocks a kernel can run at once, one per SM for a
# persistent GEMM. Why it matters: a GEMM with fewer output tiles than SMs leaves SMs idle unless it
# splits the K axis, and that choice depends on the batch (q39).
STREAMING_MULTIPROCESSORS = {
    "H100 SXM": 132,  # NVIDIA H100 Tensor Core GPU Architecture whitepaper: "132 SMs" on H100 SXM5
}


# ---- storage a model or an adapter is loaded from ------------------------------------------------
