"""What makes the validation report decide: each side's data coverage, the one window both
sides are compared over, a verdict per SLO and target, and the money with its inputs.

* **Coverage**: the seconds of the asked window each cluster's telemetry covers ("14 min of
  24 h"), from the same series the cost ledger reads (:mod:`cost.coverage`).
* **Equal windows**: both sides are compared over the span where *both* have data — from the
  later first value to the earlier last one, widened to whole minutes so two readings in the
  same minute give the same figures. A "24 h" report whose unified side reported for 14
  minutes compares those 14 minutes on both sides, and says so.
* **Verdicts**: each inference service with an operator target gets one verdict per target
  (TTFT P99, TPOT P99, end-to-end P99): met when the mean of its stored per-step P99 over the
  compared window is at or under the target, not met above it, no verdict without data. The
  mean of per-step P99s is the stated approximation (a pooled percentile needs every
  request).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from cost.coverage import COVERAGE_METRICS, covered_intervals
from inventory.models import Cluster, Workload
from telemetry.models import Entity, EntityKind
from telemetry.read import cluster_series, entity_sums

MINUTE = 60
# (target field on Workload, stored per-step metric, label key for the page)
TARGETS = (
    ("slo_ttft_ms", "inference_ttft_p99_seconds", "ttft"),
    ("slo_tpot_ms", "inference_tpot_p99_seconds", "tpot"),
    ("slo_p99_ms", "inference_latency_p99_seconds", "e2e"),
)


@dataclass(frozen=True)
class Coverage:
    """How much of the asked window one cluster's telemetry covers, and from when to when."""

    cluster: Cluster
    covered_seconds: float
    window_seconds: float
    first: datetime | None
    last: datetime | None


def _spans(cluster: Cluster, name: str, start: datetime, end: datetime) -> tuple[list, int]:
    """Covered ``(from, to)`` spans of one scalar in the window, and the series' step."""
    series = cluster_series(cluster, name, start, end)
    if series is None or not series.points:
        return [], 0
    lo, hi = start.timestamp(), end.timestamp()
    spans = [
        (max(a, lo), min(b, hi))
        for a, b, _ in covered_intervals(
            [p.ts for p in series.points],
            counts=[p.count for p in series.points],
            step_seconds=series.step_seconds,
        )
        if min(b, hi) > max(a, lo)
    ]
    return spans, series.step_seconds


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def coverage(cluster: Cluster, start: datetime, end: datetime) -> Coverage:
    """The cluster's coverage of the window; first and last data to the value (a long window
    reads coarse rollups, so the two ends are read again at their finest tier)."""
    window = (end - start).total_seconds()
    for name in COVERAGE_METRICS:
        spans, step = _spans(cluster, name, start, end)
        if not spans:
            continue
        first, last = spans[0][0], spans[-1][1]
        if step > MINUTE:
            head, _ = _spans(cluster, name, _at(first), _at(min(first + step, end.timestamp())))
            tail, _ = _spans(cluster, name, _at(max(last - step, first)), end)
            first = head[0][0] if head else first
            last = tail[-1][1] if tail else last
        return Coverage(
            cluster=cluster,
            covered_seconds=min(sum(b - a for a, b in spans), window),
            window_seconds=window,
            first=_at(first),
            last=_at(last),
        )
    return Coverage(cluster, 0.0, window, None, None)


def common_window(
    *sides: Coverage, start: datetime, end: datetime
) -> tuple[datetime, datetime] | None:
    """The span where every side has data, widened to whole minutes (the stored tiers'
    buckets); ``None`` when the sides do not overlap."""
    if any(side.first is None or side.last is None for side in sides):
        return None
    lo = max(side.first.timestamp() for side in sides)
    hi = min(side.last.timestamp() for side in sides)
    if hi <= lo:
        return None
    lo = max(lo // MINUTE * MINUTE, start.timestamp() // MINUTE * MINUTE)
    hi = min(-(-hi // MINUTE) * MINUTE, -(-end.timestamp() // MINUTE) * MINUTE)
    return datetime.fromtimestamp(lo, tz=UTC), datetime.fromtimestamp(hi, tz=UTC)


@dataclass(frozen=True)
class Verdict:
    """One service against one of its operator targets over the compared window."""

    cluster: str
    service: str
    target: str  # "ttft", "tpot" or "e2e"
    target_seconds: float
    measured_seconds: float | None
    values: int

    @property
    def met(self) -> bool | None:
        if self.measured_seconds is None:
            return None
        return self.measured_seconds <= self.target_seconds


def slo_verdicts(cluster: Cluster, start: datetime, end: datetime) -> list[Verdict]:
    """Every target of every inference service of ``cluster``, judged on ``[start, end)``."""
    services = list(
        Workload.objects.filter(cluster=cluster, kind=Workload.Kind.INFERENCE)
        .exclude(slo_ttft_ms=None, slo_tpot_ms=None, slo_p99_ms=None)
        .order_by("name")
        .values_list("pk", "name", *(field for field, _, _ in TARGETS))
    )
    if not services:
        return []
    entity_of = dict(
        Entity.objects.filter(
            workload_id__in=[row[0] for row in services], kind=EntityKind.WORKLOAD
        ).values_list("workload_id", "pk")
    )
    sums = {
        metric: entity_sums(
            cluster=cluster, metric_name=metric, kind=EntityKind.WORKLOAD, start=start, end=end
        )
        for _, metric, _ in TARGETS
    }
    out = []
    for pk, name, *targets in services:
        for (_, metric, key), target_ms in zip(TARGETS, targets, strict=True):
            if target_ms is None:
                continue
            total, count = sums[metric].get(entity_of.get(pk, -1), (0.0, 0))
            out.append(
                Verdict(
                    cluster=cluster.name,
                    service=name,
                    target=key,
                    target_seconds=target_ms / 1000.0,
                    measured_seconds=total / count if count else None,
                    values=count,
                )
            )
    return out
