"""Storage devices a KV tier can sit on, as their vendors rate them: capacity, speed, endurance.

Endurance is rated in drive writes per day (DWPD) over the warranty period, so the total bytes a
drive may absorb (TBW) is DWPD x capacity x warranty days. Decimal units, as datasheets use.
"""

from __future__ import annotations

from dataclasses import dataclass

from solutions.units import GB, TB


@dataclass(frozen=True)
class SSD:
    name: str
    capacity_tb: float
    seq_read_gb_s: float
    seq_write_gb_s: float
    dwpd: float | None  # None: the kit has no endurance rating for this drive
    warranty_years: float | None
    source: str

    @property
    def tbw_bytes(self) -> float:
        """Total bytes the drive is rated to absorb over its warranty."""
        if self.dwpd is None or self.warranty_years is None:
            raise ValueError(f"{self.name}: no endurance rating in the kit (dwpd, warranty_years)")
        return self.dwpd * self.capacity_tb * TB * 365 * self.warranty_years

    @property
    def read_bytes_per_s(self) -> float:
        return self.seq_read_gb_s * GB

    @property
    def write_bytes_per_s(self) -> float:
        return self.seq_write_gb_s * GB

    def days_to_wear_out(self, write_bytes_per_s: float, write_amplification: float = 1.0) -> float:
        """Days until the rated endurance is used up at a steady host write rate."""
        if not write_bytes_per_s > 0 or not write_amplification >= 1:
            raise ValueError(f"need write rate > 0 and write amplification >= 1, got "
                             f"{write_bytes_per_s}, {write_amplification}")
        return self.tbw_bytes / (write_bytes_per_s * write_amplification * 86400)


MICRON_7450_PRO_7_68TB = SSD(
    name="Micron 7450 PRO 7.68TB (U.3, PCIe Gen4)",
    capacity_tb=7.68,
    seq_read_gb_s=6.8,
    seq_write_gb_s=5.6,
    dwpd=1.0,
    warranty_years=5.0,
    source="ServeTheHome, 'Micron 7450 SSDs Launched with 176-Layer NAND': 7450 PRO rated 1 DWPD (MAX 3 DWPD), "
    "sequential reads around 6.8 GB/s, writes up to 5.6 GB/s for the higher-capacity drives, capacities to "
    "15.36 TB; five-year warranty as for Micron's 7400 series (Hardware Times, 'Micron Unveils 7400 Series'). "
    "TBW is derived: 1 x 7.68 TB x 365 x 5 = 14.0 PB",
)

NVME_GEN5 = SSD(
    name="PCIe Gen5 x4 NVMe (Samsung PM1743 15.36TB)",
    capacity_tb=15.36,
    seq_read_gb_s=13.0,
    seq_write_gb_s=6.6,
    dwpd=None,
    warranty_years=None,
    source="Samsung PM1743 announcement, Dec 2021: sequential read 13,000 MB/s, write 6,600 MB/s, up to 15.36 TB "
    "(reported e.g. at digit.in/news/general/samsung-announces-first-pcie-50-ssds-with-up-to-13gbps-read-speeds-62358.html); "
    "sequential read is a best case: a loader that reads many small files or parses on one CPU thread gets less",
)
