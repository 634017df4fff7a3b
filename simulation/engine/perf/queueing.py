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


def bursty_wait(pw_mmc, drain, kappa):
    """(P(wait), conditional-wait decay rate) for G/G/c from M/M/c and the Allen-Cunneen factor.

    Allen-Cunneen scales the mean wait by ``kappa = (ca2 + cs2) / 2``. Bursty arrivals
    (``kappa > 1``) come in clumps, so *more* requests wait, each for less: the waiting
    probability is raised to ``pw^(1/kappa)`` and the decay rate is set so the mean wait stays
    the Allen-Cunneen mean ``pw_MMc kappa / (c mu - lambda)``. For ``kappa <= 1`` the M/M/c
    probability is kept and only the decay rate stretched (plain Allen-Cunneen).
    """
    pw_mmc = np.asarray(pw_mmc, dtype=float)
    kappa = np.maximum(np.asarray(kappa, dtype=float), 1e-6)
    pw = np.where(kappa > 1.0, np.power(np.maximum(pw_mmc, 1e-300), 1.0 / kappa), pw_mmc)
    pw = np.where(pw_mmc > 0, pw, 0.0)
    mean = pw_mmc * kappa / np.maximum(drain, 1e-300)
    theta = np.where(pw_mmc > 0, pw / np.maximum(mean, 1e-300), drain / kappa)
    return pw, theta


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
    pw, theta = bursty_wait(pw, drain, kappa)
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


# --- Per-step serving tails with carried backlog (issue 13) --------------------------------

RHO_STEADY_MAX = 0.99  # above this the steady state is out of reach within a step: fluid takes over


def _phi(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF (vectorised, no SciPy)."""
    erf = np.frompyfunc(math.erf, 1, 1)
    return 0.5 * (1.0 + erf(np.asarray(x, dtype=float) / math.sqrt(2.0)).astype(float))


def wait_quantile(q: float, pw: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Quantile of Wq where Wq = 0 w.p. 1-pw, else Exp(theta)."""
    tail = 1.0 - q
    return np.where(pw > tail, np.log(np.maximum(pw, tail) / tail) / theta, 0.0)


class StepTails:
    """Per-service waiting-time model of one step: steady G/G/c part plus a fluid backlog."""

    __slots__ = (
        "pw",
        "theta",
        "rho",
        "w_lo",
        "w_hi",
        "backlog",
        "timeouts",
        "served",
        "capacity",
        "mean_wait",
    )

    def __init__(self, **kw: np.ndarray) -> None:
        for k, v in kw.items():
            setattr(self, k, v)

    def wait_quantile(self, q: float) -> np.ndarray:
        """Arrival-weighted waiting-time quantile: max of steady and fluid parts."""
        ss = wait_quantile(q, self.pw, self.theta)
        fluid = self.w_lo + q * (self.w_hi - self.w_lo)
        return np.maximum(ss, fluid)

    def wait_cdf(self, x: np.ndarray) -> np.ndarray:
        """P(wait <= x) (independence of the two parts: product of CDFs)."""
        x = np.asarray(x, dtype=float)
        ss = np.where(x < 0, 0.0, 1.0 - self.pw * np.exp(-self.theta * np.maximum(x, 0.0)))
        span = np.maximum(self.w_hi - self.w_lo, 1e-12)
        fl = np.clip((x - self.w_lo) / span, 0.0, 1.0)
        fl = np.where(self.w_hi - self.w_lo < 1e-12, (x >= self.w_hi).astype(float), fl)
        return ss * fl


def step_tails(
    lam: np.ndarray,
    servers: np.ndarray,
    service_s: np.ndarray,
    cs2: np.ndarray,
    ca2: np.ndarray,
    backlog0: np.ndarray,
    dt: float,
    timeout_s: np.ndarray,
) -> StepTails:
    """Waiting-time tails of one step for G/G/c services with a backlog carried in.

    * Steady part (Allen-Cunneen): Erlang C waiting probability, conditional wait exponential
      with rate ``(c mu - lambda) / ((ca2 + cs2) / 2)``, evaluated at ``min(rho, 0.99)`` so it is
      nondecreasing in load and finite.
    * Fluid part: the backlog evolves as ``B1 = max(B0 + (lambda - c mu) dt, 0)``; a request
      arriving while ``B`` requests wait ahead of it waits ``B / (c mu)`` (FIFO), so waits over
      the step range from ``B0/(c mu)`` to ``B1/(c mu)``. Backlog beyond ``c mu x timeout``
      times out (counted) and leaves the queue. With no servers every arrival waits and times
      out once its wait would exceed the timeout.
    Both parts grow with ``lambda`` (and the steady part with ``ca2``), so every quantile is
    monotone in load and burstiness; past saturation the backlog, and the latency, grow step
    over step until requests time out.
    """
    lam = np.asarray(lam, dtype=float)
    servers = np.asarray(servers, dtype=float)
    es = np.maximum(np.asarray(service_s, dtype=float), 1e-9)
    c_int = np.maximum(servers, 1).astype(np.int64)
    mu_c = np.where(servers > 0, servers / es, 0.0)  # completions per second at full load
    rho = np.where(mu_c > 0, lam / np.maximum(mu_c, 1e-12), np.where(lam > 0, np.inf, 0.0))
    rho_ss = np.minimum(np.where(np.isfinite(rho), rho, RHO_STEADY_MAX), RHO_STEADY_MAX)
    a = rho_ss * c_int
    pw = np.array([erlang_c(int(c), float(x)) for c, x in zip(c_int, a, strict=True)])
    pw = np.where(servers > 0, pw, 0.0)
    kappa = 0.5 * (np.asarray(ca2, dtype=float) + np.asarray(cs2, dtype=float))
    drain = np.maximum(c_int / es * (1.0 - rho_ss), 1e-12)
    pw, theta = bursty_wait(pw, drain, kappa)
    b0 = np.maximum(np.asarray(backlog0, dtype=float), 0.0)
    b1 = np.maximum(b0 + (lam - mu_c) * dt, 0.0)
    timeout_s = np.asarray(timeout_s, dtype=float)
    cap = mu_c * timeout_s
    timeouts = np.maximum(b1 - cap, 0.0)
    b1 = b1 - timeouts
    safe = np.maximum(mu_c, 1e-12)
    w0 = np.where(mu_c > 0, np.minimum(b0 / safe, timeout_s), np.where(b0 + lam > 0, timeout_s, 0))
    w1 = np.where(mu_c > 0, b1 / safe, np.where(lam > 0, timeout_s, 0.0))
    served = np.minimum(lam + (b0 - b1 - timeouts) / dt, mu_c)
    served = np.maximum(np.where(mu_c > 0, served, 0.0), 0.0)
    mean_ss = pw / theta
    return StepTails(
        pw=pw,
        theta=theta,
        rho=rho,
        w_lo=np.minimum(w0, w1),
        w_hi=np.maximum(w0, w1),
        backlog=b1,
        timeouts=timeouts,
        served=served,
        capacity=mu_c,
        mean_wait=np.maximum(mean_ss, 0.5 * (w0 + w1)),
    )
