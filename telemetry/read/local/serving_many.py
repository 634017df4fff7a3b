"""Serving figures of many workloads over one window, each and pooled, in one store query.

What the validation report reads: for every inference service of a cluster its TTFT / TPOT /
end-to-end P50/P95/P99 over exactly the window asked, and the cluster's pooled figure — the
percentile of *all* its services' requests, from the sum of every service's bucket increases
(``histogram_quantile`` over merged histograms, never a mean of per-service or per-step
percentiles).

The counters' increases are computed in the database (a window function per series: the sum
of each step's rise, a drop being a counter reset that counts the value after it — exactly
:func:`telemetry.read.local.histograms.counter_increase` — per source, each writer's counter
being its own series), so a 24-hour window over a hundred
services reads one row per series instead of every stored point. Every stored value counts
(a page's figure, not a gate's: gates read :func:`telemetry.read.serving_window` with their
trusted sources).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.db.models import Q

from inventory.models import Workload
from telemetry.families.serving import HISTOGRAMS, SERVING_KIND
from telemetry.models import Entity, EntityKind, MetricDefinition, Sample
from telemetry.read.local.serving import (
    _COUNTERS,
    ServingWindow,
    bound_entities,
    figures,
    finished,
)

_INCREASES = """
SELECT metric_id, entity_id, COUNT(DISTINCT ts),
       SUM(CASE WHEN prev IS NULL THEN 0.0 WHEN value >= prev THEN value - prev ELSE value END)
FROM (
    SELECT metric_id, entity_id, ts, value,
           LAG(value) OVER (PARTITION BY metric_id, entity_id, source_id ORDER BY ts) AS prev
    FROM {table}
    WHERE entity_id IN ({entities}) AND metric_id IN ({metrics}) AND ts >= %s AND ts <= %s
) AS points
GROUP BY metric_id, entity_id
"""


@dataclass(frozen=True)
class ServingWindows:
    """Each workload's serving window (by workload id) and the pooled one over all of them."""

    by_workload: dict[int, ServingWindow]
    pooled: ServingWindow


def _serving_metrics() -> dict[int, str]:
    return {
        m.pk: m.name
        for m in MetricDefinition.objects.filter(
            Q(name__in=_COUNTERS)
            | Q(name__in=[f"{h}_count" for h in HISTOGRAMS])
            | Q(name__in=[f"{h}_sum" for h in HISTOGRAMS])
            | Q(name__startswith="serving_ttft_seconds_bucket")
            | Q(name__startswith="serving_tpot_seconds_bucket")
            | Q(name__startswith="serving_e2e_seconds_bucket")
        )
    }


def _entities_of(cluster_id: int, workload_ids: list[int]) -> dict[int, tuple[int, str]]:
    """``{entity id: (workload id, key)}``: each workload's own entity (where the twin writes)
    and, for workloads bound to real endpoints, the endpoints :func:`bound_entities` finds."""
    out = {
        pk: (workload_id, key)
        for pk, workload_id, key in Entity.objects.filter(
            cluster_id=cluster_id, kind=EntityKind.WORKLOAD, workload_id__in=workload_ids
        ).values_list("pk", "workload_id", "key")
    }
    bound = (
        Workload.objects.filter(pk__in=workload_ids)
        .filter(~Q(series_selector="") | Q(serving_bindings__isnull=False))
        .values_list("pk", flat=True)
        .distinct()
    )
    for workload_id in bound:
        for entity in bound_entities(cluster_id=cluster_id, workload_id=workload_id):
            if entity.kind == SERVING_KIND:
                out.setdefault(entity.pk, (workload_id, entity.key))
    return out


def increases(
    entity_ids: list[int], metrics: dict[int, str], start: datetime, end: datetime
) -> list[tuple[str, int, int, float]]:
    """``(metric name, entity id, points, increase)`` of every series over ``[start, end]``."""
    if not entity_ids or not metrics:
        return []
    sql = _INCREASES.format(
        table=Sample._meta.db_table,
        entities=",".join(str(int(e)) for e in entity_ids),
        metrics=",".join(str(int(m)) for m in metrics),
    )
    fmt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(sql, [fmt(start), fmt(end)])
        rows = cursor.fetchall()
    return [(metrics[m], e, int(n), float(inc or 0.0)) for m, e, n, inc in rows]


def _window(
    start: datetime, end: datetime, keys: tuple[str, ...], per_entity: dict[int, dict], points
) -> ServingWindow:
    totals: dict[str, float] = defaultdict(float)
    for own in per_entity.values():
        for name, value in own.items():
            totals[name] += value
    return ServingWindow(
        start=start,
        end=end,
        endpoints=keys,
        ttft=figures("serving_ttft_seconds", totals),
        tpot=figures("serving_tpot_seconds", totals),
        e2e=figures("serving_e2e_seconds", totals),
        requests=sum(finished(own) for own in per_entity.values()),
        failed=totals.get("serving_requests_failed_total", 0.0),
        scrapes=points,
    )


def serving_windows(
    *, cluster_id: int, workload_ids: list[int], start: datetime, end: datetime
) -> ServingWindows:
    """Every workload's serving figures over ``[start, end]`` and the pooled figures."""
    found = _entities_of(cluster_id, list(workload_ids))
    owner = {e: w for e, (w, _) in found.items()}
    keys = {e: key for e, (_, key) in found.items()}
    rows = increases(list(owner), _serving_metrics(), start, end)
    per_entity: dict[int, dict[str, float]] = defaultdict(dict)
    points: dict[int, int] = defaultdict(int)
    for name, entity_id, n, inc in rows:
        per_entity[entity_id][name] = inc
        if name == "serving_ttft_seconds_count":
            points[entity_id] = max(points[entity_id], n)
    by_workload: dict[int, ServingWindow] = {}
    for workload_id in workload_ids:
        mine = [e for e, w in owner.items() if w == workload_id]
        by_workload[workload_id] = _window(
            start,
            end,
            tuple(sorted(keys[e] for e in mine)),
            {e: per_entity[e] for e in mine if e in per_entity},
            max((points[e] for e in mine), default=0),
        )
    pooled = _window(
        start, end, tuple(sorted(keys.values())), dict(per_entity), max(points.values(), default=0)
    )
    return ServingWindows(by_workload=by_workload, pooled=pooled)
