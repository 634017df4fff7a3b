"""Serving (TTFT / TPOT / queue) metrics of a step, hooked into the snapshot (issue 13).

Cluster-level latency quantiles are request-weighted means of the per-service quantiles (the
same documented approximation as the run summary), not quantiles of the pooled distribution.
"""

from __future__ import annotations

import numpy as np

from .metric_spec import MetricSpec

_W, _C = "workload", "cluster"

SERVING_METRICS = (
    MetricSpec("inference_ttft_p50_seconds", "seconds", _W, "Median time to first token."),
    MetricSpec("inference_tpot_p50_seconds", "seconds", _W, "Median time per output token."),
    MetricSpec("inference_tpot_p99_seconds", "seconds", _W, "P99 time per output token."),
    MetricSpec("inference_queue_backlog_requests", "requests", _W, "Requests queued at step end."),
    MetricSpec("inference_timeouts_total", "count", _W, "Requests timed out in the queue."),
    MetricSpec("cluster_inference_ttft_p50_seconds", "seconds", _C, "Request-weighted TTFT P50."),
    MetricSpec("cluster_inference_ttft_p99_seconds", "seconds", _C, "Request-weighted TTFT P99."),
    MetricSpec("cluster_inference_tpot_p50_seconds", "seconds", _C, "Request-weighted TPOT P50."),
    MetricSpec("cluster_inference_tpot_p99_seconds", "seconds", _C, "Request-weighted TPOT P99."),
    MetricSpec(
        "cluster_inference_e2e_p99_seconds", "seconds", _C, "Request-weighted end-to-end P99."
    ),
    MetricSpec(
        "cluster_inference_queue_backlog_requests", "requests", _C, "Queued requests, all services."
    ),
    MetricSpec("cluster_inference_timeouts_total", "count", _C, "Requests timed out since start."),
)


def workload_values(services, lat: dict, n_jobs: int) -> dict[str, np.ndarray]:
    """Per-workload arrays (NaN for training jobs) of the serving metrics."""
    nan_j = np.full(n_jobs, np.nan)
    to = services.timeouts_total
    return {
        "inference_ttft_p50_seconds": np.concatenate([nan_j, lat["ttft_p50"]]),
        "inference_tpot_p50_seconds": np.concatenate([nan_j, lat["tpot_p50"]]),
        "inference_tpot_p99_seconds": np.concatenate([nan_j, lat["tpot_p99"]]),
        "inference_queue_backlog_requests": np.concatenate([nan_j, lat["backlog"]]),
        "inference_timeouts_total": np.concatenate([nan_j, to]),
    }


def cluster_values(counters, lat: dict, dt: float) -> dict[str, float]:
    """Cluster scalars of the serving metrics."""
    req = lat["lam"] * dt
    tot = float(req.sum())

    def w(key: str) -> float:
        return float((lat[key] * req).sum() / tot) if tot > 0 else 0.0

    return {
        "cluster_inference_ttft_p50_seconds": w("ttft_p50"),
        "cluster_inference_ttft_p99_seconds": w("ttft_p99"),
        "cluster_inference_tpot_p50_seconds": w("tpot_p50"),
        "cluster_inference_tpot_p99_seconds": w("tpot_p99"),
        "cluster_inference_e2e_p99_seconds": w("e2e_p99"),
        "cluster_inference_queue_backlog_requests": float(lat["backlog"].sum()),
        "cluster_inference_timeouts_total": float(counters.get("inference_timeouts", 0.0)),
    }
