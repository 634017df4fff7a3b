"""The overview's serving tiles: SLO attainment and P99 latency over ONE window and ONE set of
services, so the tiles cannot contradict each other or the alerts.

The set is the cluster's inference services that served requests in the window (a mean
request rate above zero and stored attainment values): a service without requests has no
attainment to report, and a cluster-wide "99.9 %" beside a worst-service "11.2 s" came from
two different sets and times (the cluster scalar, request-weighted and 1.0 when idle, against
the newest per-service value). For each figure the tiles give the worst service of the set
and the request-weighted mean over the same set; the window is the SLO fast-burn alert's
(five minutes), so a service the alert names at 0.73 is the tile's worst at 0.73 too.

Latency P99s are percentiles of the window's requests: each service's from its serving
histograms merged over the window, and beside the worst the P99 of *all* the set's requests
(every service's buckets summed; ``telemetry.read.serving_windows``). Only where a service of
the set has no histogram in the window (per-step P99 values alone) does the tile fall back
to the mean of those values, and it says so ("approximation").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from cluster_portal.web.caching import shared_read
from inventory.models import Cluster
from telemetry.models import Entity, EntityKind
from telemetry.read import entity_window_sums, serving_windows

WINDOW = timedelta(minutes=5)  # the slo-fast-burn alert rule's window (alerts.defaults)
ATTAINMENT = "inference_slo_attainment_ratio"
RATE = "inference_request_rate_per_second"
LATENCIES = (
    "inference_ttft_p99_seconds",
    "inference_tpot_p99_seconds",
    "inference_latency_p99_seconds",
)
# The serving histogram behind each stored per-step P99.
HISTOGRAM_FIGURE = {
    "inference_ttft_p99_seconds": "ttft",
    "inference_tpot_p99_seconds": "tpot",
    "inference_latency_p99_seconds": "e2e",
}


@dataclass(frozen=True)
class Worst:
    """One figure over the set: its worst service and the figure over all of it.

    ``exact``: percentiles of the window's requests (``weighted`` is then the P99 of every
    request of the set); otherwise means of per-step values, ``weighted`` their
    request-weighted mean (an approximation)."""

    service: str
    value: float
    weighted: float
    exact: bool = False


@dataclass
class ServiceSlo:
    """Attainment and latency of the same services over the same window."""

    start: datetime
    end: datetime
    services: int = 0
    attainment: Worst | None = None
    latency: dict[str, Worst | None] = field(default_factory=dict)

    @property
    def window_seconds(self) -> float:
        return (self.end - self.start).total_seconds()


def _means(sums: dict[int, tuple[float, int]]) -> dict[int, float]:
    return {entity: total / count for entity, (total, count) in sums.items() if count}


def _worst(values: dict[int, float], rates: dict[int, float], names, *, highest: bool) -> Worst:
    entity = (max if highest else min)(values, key=lambda e: (values[e], names[e]))
    weight = sum(rates[e] for e in values)
    return Worst(
        service=names[entity],
        value=values[entity],
        weighted=sum(values[e] * rates[e] for e in values) / weight,
    )


def service_slo(cluster: Cluster, now: datetime) -> ServiceSlo:
    """The serving tiles' figures for ``[now − WINDOW, now)`` (shared for a few seconds)."""

    def compute() -> ServiceSlo:
        start = now - WINDOW
        out = ServiceSlo(start=start, end=now)
        sums = entity_window_sums(
            cluster=cluster,
            metric_names=[RATE, ATTAINMENT, *LATENCIES],
            kind=EntityKind.WORKLOAD,
            start=start,
            end=now,
        )
        rates = {e: r for e, r in _means(sums[RATE]).items() if r > 0}
        attainment = _means(sums[ATTAINMENT])
        members = sorted(set(rates) & set(attainment))
        if not members:
            return out
        rows = list(Entity.objects.filter(pk__in=members).values_list("pk", "key", "workload_id"))
        names = {pk: key for pk, key, _ in rows}
        workload_of = {pk: workload for pk, _, workload in rows}
        out.services = len(members)
        out.attainment = _worst({e: attainment[e] for e in members}, rates, names, highest=False)
        workload_of = dict(Entity.objects.filter(pk__in=members).values_list("pk", "workload_id"))
        found = serving_windows(
            cluster_id=cluster.pk,
            workload_ids=[w for w in workload_of.values() if w is not None],
            start=start,
            end=now,
        )
        for metric in LATENCIES:
            figure = HISTOGRAM_FIGURE[metric]
            exact = {}
            for e in members:
                window = found.by_workload.get(workload_of.get(e))
                value = getattr(window, figure).get("p99") if window is not None else None
                if value is not None:
                    exact[e] = value
            values = _means(sums[metric])
            values = {e: values[e] for e in members if e in values}
            pooled = getattr(found.pooled, figure).get("p99")
            if exact and set(values) <= set(exact) and pooled is not None:
                entity = max(exact, key=lambda e: (exact[e], names[e]))
                out.latency[metric] = Worst(names[entity], exact[entity], pooled, exact=True)
            else:
                out.latency[metric] = _worst(values, rates, names, highest=True) if values else None
        return out

    # The window ends "now": readers within a few seconds share one computation.
    return shared_read("service-slo", cluster.pk, compute)
