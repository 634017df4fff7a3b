"""``telemetry.read``'s serving functions, answered by the cluster's ``ReadBackend``.

See :mod:`telemetry.read` (the "serving endpoints" paragraph) for what each returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from inventory.models import Workload
from telemetry.families.serving import SERVING_KIND
from telemetry.read.choice import backend_for
from telemetry.read.local import serving_many as _serving_many
from telemetry.read.local.entity_windows import MeasurementError, WindowAggregate
from telemetry.read.local.serving import ServingWindow

_HISTOGRAM_FIGURES = ("p50", "p95", "p99", "mean")


def serving_window(
    *,
    cluster_id: int,
    start: datetime,
    end: datetime,
    workload_id: int | None = None,
    endpoint_keys: Sequence[str] | None = None,
    trusted: Sequence[str] | None = None,
    requester_id: int | None = None,
) -> ServingWindow:
    """Serving figures of a workload (its ``ServingBinding`` endpoints and, for the twin, its
        own entity) or of endpoints named by key (``<model>@<instance|namespace/pod>``) over
        ``[start, end]``. ``trusted`` as for :func:`telemetry.read.window_aggregate` (``None``:
        every value, for pages); ``requester_id`` (a plan's requester) drops the bindings,
    targets and data source only they vouched for. Raises ``DataSourceUnavailable`` when a
    PromQL server fails."""
    return backend_for(cluster_id).serving_window(
        start=start,
        end=end,
        workload_id=workload_id,
        endpoint_keys=endpoint_keys,
        trusted=trusted,
        requester_id=requester_id,
    )


def serving_windows(
    *, cluster_id: int, workload_ids: Sequence[int], start: datetime, end: datetime
) -> _serving_many.ServingWindows:
    """Every workload's serving figures over ``[start, end]`` and the pooled figures of all
    of them (percentiles of every request of every workload: merged histograms), every
    stored value counted (pages and the report). On a PromQL cluster each workload is one
    query set and the pooled one sums every binding's buckets on the server."""
    return backend_for(cluster_id).serving_windows(workload_ids=workload_ids, start=start, end=end)


@dataclass(frozen=True)
class ServingComparison:
    """Canary vs baseline over the same window (the plan page's side-by-side view).

    ``split`` is each side's share of the finished requests (0-1; empty when neither served
    any), ``canary.per_endpoint`` / ``baseline.per_endpoint`` the requests per endpoint.
    """

    canary: ServingWindow
    baseline: ServingWindow
    split: dict[str, float]


def serving_canary_comparison(
    *,
    canary_cluster_id: int,
    canary_workload_id: int,
    baseline_cluster_id: int,
    baseline_workload_id: int,
    start: datetime,
    end: datetime,
) -> ServingComparison:
    """TTFT/TPOT P50/P99 of canary and baseline and the request split, over one window."""
    canary = serving_window(
        cluster_id=canary_cluster_id, workload_id=canary_workload_id, start=start, end=end
    )
    baseline = serving_window(
        cluster_id=baseline_cluster_id, workload_id=baseline_workload_id, start=start, end=end
    )
    total = canary.requests + baseline.requests
    split = (
        {"canary": canary.requests / total, "baseline": baseline.requests / total} if total else {}
    )
    return ServingComparison(canary=canary, baseline=baseline, split=split)


def serving_window_aggregate(
    *,
    metric: str,
    cluster_id: int,
    entity_kind: str,
    entity_key: str,
    aggregation: str,
    start: datetime,
    end: datetime,
    trusted: Sequence[str] | None = None,
    requester_id: int | None = None,
) -> WindowAggregate:
    """A gate's value of a serving figure (``telemetry.families.serving.GATE_METRICS``) for a
    workload (by name) or a serving endpoint (by key); ``samples`` counts the histograms'
    scrapes in the window, ``None`` when no request finished in it."""
    if entity_kind == "workload":
        workload_id = (
            Workload.objects.filter(cluster_id=cluster_id, name=entity_key)
            .values_list("pk", flat=True)
            .first()
        )
        if workload_id is None:
            raise MeasurementError(f"no workload {entity_key!r} on this cluster")
        where = {"workload_id": workload_id}
    elif entity_kind == SERVING_KIND:
        where = {"endpoint_keys": [entity_key]}
    else:
        raise MeasurementError(f"{metric} is measured on a workload or a serving endpoint")
    found = serving_window(
        cluster_id=cluster_id,
        start=start,
        end=end,
        trusted=trusted,
        requester_id=requester_id,
        **where,
    )
    if metric in ("serving_ttft_seconds", "serving_tpot_seconds"):
        if aggregation not in _HISTOGRAM_FIGURES:
            raise MeasurementError(f"{metric} is a histogram: p50, p95, p99 or mean")
        figures = found.ttft if metric == "serving_ttft_seconds" else found.tpot
        value = figures.get(aggregation)
    elif metric == "serving_error_ratio":
        value = found.error_ratio
    else:
        value = found.requests_per_second
    if value is None:
        return WindowAggregate(None, 0, ignored=found.ignored)
    return WindowAggregate(value, found.scrapes, sources=found.sources, ignored=found.ignored)
