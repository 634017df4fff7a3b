"""The twin's serving latencies in a real engine's form: histogram bucket increments.

Gates, pages and the report read TTFT/TPOT/end-to-end quantiles from bucket-aware
histograms, the way vLLM, SGLang and MindIE export them (``telemetry.ingest.serving``). So
that one code path evaluates the twin and real engines, each step's **sampled requests**
(:mod:`.serving.requests`) are counted into vLLM's bucket bounds, each weighted by the
requests it stands for (requests in the step ÷ sample size): the snapshot's
``serving_hist``. Summed over any window, those counts are a histogram of that window's
requests, and ``histogram_quantile`` over it is a percentile of the window — never a mean of
per-step percentiles. Its error is the histogram's: the answer lies in the bucket that holds
the true sample quantile (linear interpolation inside it), plus the sampling error of at most
:data:`.serving.requests.SAMPLE_REQUESTS` requests per service and step.

Only when a step carries no sampled histogram for a served service (an engine state from
before request-level sampling) are its requests spread as a log-normal fitted to the step's
P50 and P99 (σ = ln(P99/P50) / z₀.₉₉) — an approximation kept for those old states. The
caller adds the increments to the service's cumulative counters (the Django glue keeps them
in the store).

Bucket metric names are ``<histogram>_bucket{le="<bound>"}`` with the bound spelled as
Python's ``repr(float)`` (``+Inf`` for infinity), exactly as the ingestion names them.
"""

from __future__ import annotations

import math

import numpy as np

# vLLM's bucket bounds (vllm/v1/metrics/loggers.py).
TTFT_BOUNDS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
TPOT_BOUNDS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
# vLLM's request-latency bounds (vllm/v1/metrics/loggers.py, ``request_latency_buckets``).
E2E_BOUNDS = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)
# What the request sampler counts per step (histogram -> finite bounds); each row of its
# arrays is ``[count ≤ bound for each bound..., count (+Inf), sum of seconds]``.
STEP_HISTOGRAMS = {
    "serving_ttft_seconds": TTFT_BOUNDS,
    "serving_tpot_seconds": TPOT_BOUNDS,
    "serving_e2e_seconds": E2E_BOUNDS,
}
Z99 = 2.3263478740408408  # standard normal quantile at 0.99
_SOURCES = {
    "serving_ttft_seconds": (
        "inference_ttft_p50_seconds",
        "inference_ttft_p99_seconds",
        TTFT_BOUNDS,
    ),
    "serving_tpot_seconds": (
        "inference_tpot_p50_seconds",
        "inference_tpot_p99_seconds",
        TPOT_BOUNDS,
    ),
}
RATE = "inference_request_rate_per_second"


def bucket_name(histogram: str, bound: float) -> str:
    le = "+Inf" if math.isinf(bound) else repr(float(bound))
    return f'{histogram}_bucket{{le="{le}"}}'


def _cdf(x: np.ndarray) -> np.ndarray:
    return np.array([0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.tolist()], float)


def step_increments(
    values: dict[str, np.ndarray], dt: float, sampled: dict[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """``{metric: per-workload increment}`` for one step of ``dt`` seconds: each histogram's
    buckets (cumulative in ``le``), ``_count`` and ``_sum``, and the finished requests
    (``serving_requests_success_total``). NaN for workloads that serve nothing (training).

    ``sampled`` is the snapshot's ``serving_hist`` (rows aligned with the workloads): where a
    row is finite it is the step's histogram; elsewhere the fitted log-normal stands in."""
    rate = np.asarray(values.get(RATE, []), dtype=float)
    out: dict[str, np.ndarray] = {}
    if rate.size == 0:
        return out
    requests = np.where(np.isfinite(rate), np.maximum(rate, 0.0) * dt, np.nan)
    covered = {h: np.isfinite(c[:, -2]) for h, c in (sampled or {}).items()}
    _fitted(values, requests, covered, out)
    for histogram, counts in (sampled or {}).items():
        bounds = STEP_HISTOGRAMS[histogram]
        have = np.flatnonzero(covered[histogram] & np.isfinite(requests))
        if not have.size:
            continue
        for i, bound in enumerate((*bounds, math.inf)):
            name = bucket_name(histogram, bound)
            out.setdefault(name, np.full(rate.size, np.nan))[have] = counts[have, i]
        for suffix, column in (("_count", -2), ("_sum", -1)):
            out.setdefault(f"{histogram}{suffix}", np.full(rate.size, np.nan))[have] = counts[
                have, column
            ]
    out["serving_requests_success_total"] = requests
    return out


def _fitted(values: dict[str, np.ndarray], requests: np.ndarray, covered: dict, out: dict) -> None:
    """The fitted log-normal's increments where no sampled histogram ``covered`` a served
    service (TTFT/TPOT only; see the module docstring)."""
    rate = requests
    for histogram, (p50_name, p99_name, bounds) in _SOURCES.items():
        p50 = np.asarray(values.get(p50_name, np.full(rate.size, np.nan)), dtype=float)
        p99 = np.asarray(values.get(p99_name, np.full(rate.size, np.nan)), dtype=float)
        ok = np.isfinite(p50) & np.isfinite(p99) & (p50 > 0) & np.isfinite(requests)
        if histogram in covered:
            ok &= ~covered[histogram]
        if not ok.any():
            continue
        mu = np.log(np.where(ok, p50, 1.0))
        spread = np.log(np.where(ok, np.maximum(p99, p50), 1.0)) - mu
        sigma = np.where(ok, np.maximum(spread, 1e-6) / Z99, 1.0)
        n = np.where(ok, requests, np.nan)
        # The CDF only where a service has latencies: the workload arrays are mostly training
        # jobs (NaN here), and erf is a scalar call per element.
        served = np.flatnonzero(ok)
        for bound in bounds:
            share = np.full(rate.size, np.nan)
            share[served] = _cdf((math.log(bound) - mu[served]) / sigma[served])
            out[bucket_name(histogram, bound)] = n * share
        out[bucket_name(histogram, math.inf)] = n
        out[f"{histogram}_count"] = n
        out[f"{histogram}_sum"] = n * np.exp(mu + sigma**2 / 2)  # the log-normal's mean
