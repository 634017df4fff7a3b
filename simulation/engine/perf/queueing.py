"""Multi-server queue model for per-service latency tails (P50/P99) and TTFT.

Each service is a G/G/c queue: ``c = replicas x batch slots`` servers (continuous batching gives
each replica ``max_batch`` concurrent sequences), arrivals with squared coefficient of variation
``ca2`` and a service time ``S = s0 + Exp(mean s1)`` (``s0`` = prefill, ``s1`` = mean decode time:
output lengths are roughly geometric).

* Waiting probability: Erlang C for M/M/c with offered load ``a = lambda E[S]``.
* Conditional wait: exponential with the M/M/c rate ``c mu - lambda`` (the exact M/M/c tail
  ``P(Wq > t) = C exp(-(c mu - lambda) t)``), stretched by the Allen-Cunneen factor
  ``(ca2 + cs2) / 2`` for G/G/c. With ``ca2 = cs2 = 1`` this is exact for M/M/c waiting.
* Response time ``T = Wq + S``: the survival function is a closed-form mixture of exponential
  and hypo-exponential terms, inverted by vectorised bisection.

Validated against :mod:`.des` (per-request simulation); see ``tests/engine/test_queueing.py``
and the README for the measured error.
"""

from __future__ import annotations

import math

import numpy as np


def erlang_c(c: int, a: float) -> float:
    """Probability an arrival waits in M/M/c with ``c`` servers and offered load ``a`` Erlangs.

    Uses Erlang B computed from Poisson-term ratios in log space (stable for c in the
    thousands); terms far below the mode are negligible and skipped. Returns 1 when a >= c.
    """
    if a <= 0.0:
        return 0.0
    if a >= c:
        return 1.0
    if c <= 64:
        b = 1.0
        for k in range(1, c + 1):
            b = a * b / (k + a * b)
    else:
        lo = max(0, int(a - 12.0 * math.sqrt(a) - 20.0), c - 20000)
        j = np.arange(c, lo, -1, dtype=np.float64)
        logs = np.cumsum(np.log(j / a))  # log(p_k / p_c) for k = c-1 .. lo
        top = max(float(logs.max()) if logs.size else 0.0, 0.0)
        log_sum = top + math.log(math.exp(-top) + float(np.exp(logs - top).sum()))
        b = math.exp(-log_sum)
    return c * b / (c - a * (1.0 - b))


def _survival_u(u, pw, theta, nu):
    """P(Wq + Exp(nu) > u) with Wq = 0 w.p. 1-pw, else Exp(theta)."""
    e_nu = np.exp(-nu * u)
    close = np.abs(theta - nu) < 1e-9 * np.maximum(theta, nu)
    denom = np.where(close, 1.0, theta - nu)
    hypo = np.where(close, (1.0 + nu * u) * e_nu, (theta * e_nu - nu * np.exp(-theta * u)) / denom)
    return (1.0 - pw) * e_nu + pw * hypo


class QueueResult:
    """Vectorised latency figures for a batch of services (seconds; arrays)."""

    __slots__ = ("pw", "theta", "rho", "s0", "s1", "p50", "p99", "ttft_p99", "mean_wait")

    def __init__(self, **kw: np.ndarray) -> None:
        for k, v in kw.items():
            setattr(self, k, v)

    def survival(self, t: np.ndarray) -> np.ndarray:
        """P(response time > t) per service (used for SLO attainment)."""
        u = np.maximum(np.asarray(t, dtype=float) - self.s0, 0.0)
        s = _survival_u(u, self.pw, self.theta, 1.0 / np.maximum(self.s1, 1e-9))
        return np.where(t < self.s0, 1.0, s)

    def ttft_survival(self, t: np.ndarray, prefill: np.ndarray) -> np.ndarray:
        """P(TTFT > t) per service; TTFT = Wq + prefill."""
        u = np.asarray(t, dtype=float) - prefill
        return np.where(u < 0, 1.0, self.pw * np.exp(-self.theta * np.maximum(u, 0.0)))


def _quantile_u(q: float, pw, theta, nu, iters: int = 32):
    target = 1.0 - q
    hi = (math.log(1.0 / target) + 2.0) * (1.0 / nu + 1.0 / theta) * 2.0
    lo = np.zeros_like(hi)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        above = _survival_u(mid, pw, theta, nu) > target
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    return 0.5 * (lo + hi)


def ggc_latency(
    lam: np.ndarray,
    servers: np.ndarray,
    s0: np.ndarray,
    s1: np.ndarray,
    ca2: np.ndarray,
) -> QueueResult:
    """Latency tails for services with arrival rate ``lam`` (1/s) and ``servers`` slots.

    Saturated services (``rho >= 1``) get a wait derived from a queue that grows for the whole
    step; callers clip with their step length (the steady-state formulas do not apply).
    """
    lam = np.asarray(lam, dtype=float)
    servers = np.asarray(servers, dtype=float)
    s0 = np.asarray(s0, dtype=float)
    s1 = np.maximum(np.asarray(s1, dtype=float), 1e-9)
    es = s0 + s1
    mu = 1.0 / es
    a = lam * es
    c_int = np.maximum(servers, 1).astype(np.int64)
    rho = np.where(servers > 0, a / np.maximum(servers, 1), np.inf)
    pw = np.array([erlang_c(int(c), float(x)) for c, x in zip(c_int, a, strict=True)])
    cs2 = (s1 / es) ** 2
    kappa = 0.5 * (np.asarray(ca2, dtype=float) + cs2)
    # Saturated: pretend a tiny positive drain rate so formulas stay finite; caller clips.
    drain = np.maximum(c_int * mu - lam, 1e-6 * c_int * mu)
    theta = drain / kappa
    nu = 1.0 / s1
    p50 = s0 + _quantile_u(0.5, pw, theta, nu)
    p99 = s0 + _quantile_u(0.99, pw, theta, nu)
    wq99 = np.where(pw > 0.01, np.log(np.maximum(pw, 0.01) / 0.01) / theta, 0.0)
    return QueueResult(
        pw=pw,
        theta=theta,
        rho=rho,
        s0=s0,
        s1=s1,
        p50=p50,
        p99=p99,
        ttft_p99=wq99,
        mean_wait=pw / theta,
    )
