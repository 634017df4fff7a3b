"""Request latency for ``/metrics``: ``portal_http_request_duration_seconds``, a histogram per
route group, method and status class.

**Multiprocess-safe.** Under gunicorn every worker process counts its own requests. When
``PROMETHEUS_MULTIPROC_DIR`` is set (``cluster_portal.gunicorn_conf`` sets it, under ``var/``,
and empties it when the master starts), ``prometheus_client`` keeps each process' values in a
memory-mapped file there and ``/metrics`` sums every process' files, so whichever worker
answers the scrape, the histogram is the whole server's. Without it (``runserver``, tests) the
process' own values are answered.

Labels are bounded by construction: ``group`` is the first path segment when it is one of the
portal's own (``api``, ``dashboards``, …), else ``other``; ``status`` is the class (``2xx``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client import multiprocess as prometheus_multiprocess

ROUTE_GROUPS = frozenset(
    {
        "api", "admin", "alerts", "cost", "dashboards", "exporters", "inventory", "login",
        "metrics", "migrations", "report", "scheduler", "static", "status", "twin", "whatif",
        "workloads",
    }
)  # fmt: skip

# From a cached dashboard answer (milliseconds) to a slow PromQL-backed page (tens of seconds).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

#: Not registered with the global registry: ``/metrics`` builds its own each scrape.
REQUEST_SECONDS = Histogram(
    "portal_http_request_duration_seconds",
    "Time the portal took to answer a request, by route group, method and status class",
    labelnames=("group", "method", "status"),
    buckets=BUCKETS,
    registry=None,
)

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_group(path: str) -> str:
    """The first path segment when it names one of the portal's route groups, else ``other``
    (``/`` is ``home``)."""
    first = path.lstrip("/").split("/", 1)[0]
    if not first:
        return "home"
    return first if first in ROUTE_GROUPS else "other"


def register_request_metrics(registry: CollectorRegistry) -> None:
    """Add the request histogram to a scrape's registry: every process' values under
    gunicorn (``PROMETHEUS_MULTIPROC_DIR``), this process' otherwise."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        prometheus_multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(REQUEST_SECONDS)


class RequestLatencyMiddleware:
    """Observes each request's duration in :data:`REQUEST_SECONDS` (outermost, so the time
    includes every other middleware)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        method = request.method if request.method in METHODS else "other"
        REQUEST_SECONDS.labels(
            group=route_group(request.path),
            method=method,
            status=f"{response.status_code // 100}xx",
        ).observe(time.perf_counter() - started)
        return response
