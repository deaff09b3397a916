"""What a GPU-hour costs. These are ASSUMPTIONS, not facts: round on-demand list prices at GPU
clouds in 2025, for pricing levers against each other. Replace them with your own contract
prices; the rankings in the notebooks rarely change, the dollar figures do."""

from solutions.hardware import A100_80GB_SXM, GPU, H100_SXM, L40S

ASSUMED_USD_PER_GPU_HOUR = {
    A100_80GB_SXM.name: 1.80,
    H100_SXM.name: 3.00,
    L40S.name: 1.00,
}


def usd_per_gpu_hour(gpu: GPU) -> float:
    try:
        return ASSUMED_USD_PER_GPU_HOUR[gpu.name]
    except KeyError:
        raise ValueError(f"no assumed price for {gpu.name}; known: {', '.join(ASSUMED_USD_PER_GPU_HOUR)}") from None


# How the same GPU-hour is sold. ASSUMED mid-range discounts off on-demand, for ranking levers only:
# providers advertise spot capacity at "up to 90%" off on-demand and one- or three-year commitments
# (AWS Savings Plans) at "up to 72%" off (AWS EC2 Spot and Savings Plans pricing pages). Spot can be
# reclaimed at short notice: a batch job that checkpoints per document loses little, a chat server
# cannot use it. Replace with your quotes.
ASSUMED_DISCOUNT_OFF_ON_DEMAND = {
    "on-demand": 0.0,
    "1-year commitment": 0.35,
    "spot / preemptible": 0.60,
}
