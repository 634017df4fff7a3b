"""Per-request discrete-event reference for the analytic queue model (FCFS G/G/c).

Kept in the engine so tests (and anyone doubting the analytic tails) can compare the two on the
same inputs. Exact FCFS multi-server dynamics: each arrival starts on the earliest-free server.
"""

from __future__ import annotations

import heapq

import numpy as np


def interarrivals(rng: np.random.Generator, lam: float, n: int, ca2: float = 1.0) -> np.ndarray:
    """Inter-arrival times with mean ``1/lam`` and squared CV ``ca2``.

    ca2 = 1: exponential; ca2 > 1: balanced-means two-phase hyper-exponential; ca2 < 1: gamma.
    """
    mean = 1.0 / lam
    if abs(ca2 - 1.0) < 1e-12:
        return rng.exponential(mean, n)
    if ca2 > 1.0:
        p = 0.5 * (1.0 + np.sqrt((ca2 - 1.0) / (ca2 + 1.0)))
        branch = rng.random(n) < p
        m1, m2 = mean / (2 * p), mean / (2 * (1 - p))
        return np.where(branch, rng.exponential(m1, n), rng.exponential(m2, n))
    shape = 1.0 / ca2
    return rng.gamma(shape, mean / shape, n)


def simulate_ggc(
    lam: float,
    servers: int,
    s0: float,
    s1: float,
    n: int,
    rng: np.random.Generator,
    ca2: float = 1.0,
    warmup: float = 0.1,
) -> tuple[np.ndarray, np.ndarray]:
    """Simulate ``n`` requests; return (response times, waiting times) after a warm-up cut.

    Service time per request is ``s0 + Exp(mean s1)`` as in :mod:`.queueing`.
    """
    arrivals = np.cumsum(interarrivals(rng, lam, n, ca2))
    service = s0 + rng.exponential(s1, n)
    free = [0.0] * servers  # heap of server free times
    waits = np.empty(n)
    arr = arrivals.tolist()
    svc = service.tolist()
    for i in range(n):
        t = arr[i]
        f = free[0]
        start = f if f > t else t
        heapq.heapreplace(free, start + svc[i])
        waits[i] = start - t
    cut = int(n * warmup)
    return (waits + service)[cut:], waits[cut:]
