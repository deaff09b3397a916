"""Queueing closed forms the simulator is checked against (single server, FCFS, Poisson arrivals).

    M/G/1 (Pollaczek-Khinchine):  Wq = lambda E[S^2] / (2 (1 - rho)),  rho = lambda E[S]
    M/M/1:  E[S^2] = 2/mu^2        ->  Wq = rho / (mu - lambda)
    M/D/1:  E[S^2] = E[S]^2        ->  Wq = rho E[S] / (2 (1 - rho))   (half of M/M/1's)

Wq is the mean wait in queue; the mean time in system is Wq + E[S]. (Kleinrock, Queueing Systems
Vol. 1, ch. 5.) `lindley_waits` is the exact wait of every customer for a given sample path, the
recursion W[n+1] = max(0, W[n] + S[n] - A[n+1]), used to check the simulator path by path.
"""

from __future__ import annotations

import numpy as np

from solutions.serving.distributions import Distribution


def _utilisation(arrival_rate: float, mean_service_s: float) -> float:
    if not arrival_rate > 0:
        raise ValueError(f"arrival_rate must be positive, got {arrival_rate}")
    if not mean_service_s > 0:
        raise ValueError(f"mean service time must be positive, got {mean_service_s}")
    rho = arrival_rate * mean_service_s
    if rho >= 1:
        raise ValueError(f"utilisation arrival_rate x mean service = {rho:.3g} >= 1: the queue grows without bound")
    return rho


def mg1_wait(arrival_rate: float, service: Distribution) -> float:
    """Pollaczek-Khinchine mean wait in queue, seconds."""
    rho = _utilisation(arrival_rate, service.mean)
    return arrival_rate * service.second_moment / (2 * (1 - rho))


def mm1_wait(arrival_rate: float, service_rate: float) -> float:
    rho = _utilisation(arrival_rate, 1 / service_rate)
    return rho / (service_rate - arrival_rate)


def md1_wait(arrival_rate: float, service_s: float) -> float:
    rho = _utilisation(arrival_rate, service_s)
    return rho * service_s / (2 * (1 - rho))


def lindley_waits(arrival_s: np.ndarray, service_s: np.ndarray) -> np.ndarray:
    """Every customer's exact FCFS wait for this sample path (vectorised Lindley recursion:
    with X the running sum of S[n] - A[n+1], W = X - min(X so far, 0))."""
    gaps = np.diff(arrival_s)
    x = np.concatenate([[0.0], np.cumsum(service_s[:-1] - gaps)])
    return x - np.minimum.accumulate(np.minimum(x, 0.0))
