"""Serving figures over a window from the stored serving series (bucket-aware histograms).

What gates and the plan page read for an inference workload or endpoint: TTFT/TPOT
quantiles from bucket increases (:mod:`telemetry.read.local.histograms`), the error ratio
(increase of failed ÷ increase of all finished requests) and the throughput (finished
requests per second). The twin writes the same series on its workload entities, real
engines on their serving endpoints (``telemetry.ingest.serving``), so one code path
measures both.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import OuterRef, Q, Subquery
from django.utils import timezone

from inventory.label_selectors import SelectorError, parse_selector, selector_matches
from inventory.models import Workload
from telemetry.families.serving import HISTOGRAMS, SERVING_KIND, bucket_le, bucket_prefix
from telemetry.models import Entity, EntityKind, MetricDefinition, Sample, ServingBinding
from telemetry.models.vouching import vouched_for
from telemetry.read.local.histograms import counter_increase, histogram_quantile
from telemetry.store.provenance import Trust, counts_by_label

QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}
_COUNTERS = (
    "serving_requests_success_total",
    "serving_requests_failed_total",
    "serving_requests_received_total",
)


@dataclass(frozen=True)
class ServingWindow:
    """Serving figures of a set of endpoints over ``[start, end]`` (``None``: no data).

    ``ttft``/``tpot``/``e2e`` map ``p50``/``p95``/``p99``/``mean`` to seconds (percentiles of
    the window's requests, from the merged bucket increases); ``requests`` are the
    finished requests (success + failed; received when an engine reports no success counter),
    ``failed`` the failed or aborted ones; ``scrapes`` how many distinct sample times the
    histograms had (what a criterion's ``min_samples`` counts); ``endpoints`` the entity keys
    read; ``sources``/``ignored`` values per source label, counted and untrusted.
    """

    start: datetime
    end: datetime
    endpoints: tuple[str, ...]
    ttft: dict[str, float | None]
    tpot: dict[str, float | None]
    requests: float
    failed: float
    scrapes: int
    per_endpoint: dict[str, float] = field(default_factory=dict)  # finished requests per key
    sources: dict[str, int] = field(default_factory=dict)
    ignored: dict[str, int] = field(default_factory=dict)
    e2e: dict[str, float | None] = field(default_factory=dict)

    @property
    def error_ratio(self) -> float | None:
        return self.failed / self.requests if self.requests > 0 else None

    @property
    def requests_per_second(self) -> float | None:
        span = (self.end - self.start).total_seconds()
        return self.requests / span if span > 0 and self.scrapes else None


def endpoint_labels(key: str) -> dict[str, str]:
    """The selectable labels (``inventory.label_selectors``) an endpoint key carries:
    ``model@namespace/pod`` gives ``namespace`` and ``pod``, ``model@host:port`` ``host``, and
    a bare ``model@name`` (a pod without namespace, or a host) both ``pod`` and ``host``."""
    where = key.partition("@")[2]
    if "/" in where:
        namespace, pod = where.split("/", 1)
        return {"namespace": namespace, "pod": pod}
    if where and ":" not in where and "." not in where:
        return {"pod": where, "host": where}  # a bare pod name or host name
    return {"host": where.rsplit(":", 1)[0] if ":" in where else where}


def _selected(cluster_id: int, selector: str) -> list[int]:
    """Endpoints of the cluster the workload's ``series_selector`` matches."""
    try:
        matchers = parse_selector(selector)
    except SelectorError:
        return []  # validated on the workload; an old bad value binds nothing
    endpoints = Entity.objects.filter(cluster_id=cluster_id, kind=SERVING_KIND).values_list(
        "pk", "key"
    )
    return [pk for pk, key in endpoints if selector_matches(matchers, endpoint_labels(key))]


def bound_entities(
    *,
    cluster_id: int,
    workload_id: int | None = None,
    endpoint_keys: list[str] | None = None,
    requester_id: int | None = None,
) -> list[Entity]:
    """The serving endpoints a workload is bound to — its ``ServingBinding`` rows and its
    ``series_selector`` (namespace/pod/host of the endpoints) — plus its own entity (where the
    twin writes), or the endpoints named by key. With ``requester_id`` (a plan's gate), only
    bindings someone other than the requester created or approved count."""
    where = Q(pk__in=[])
    if endpoint_keys:
        where |= Q(kind=SERVING_KIND, key__in=endpoint_keys)
    if workload_id is not None:
        where |= Q(kind=EntityKind.WORKLOAD, workload_id=workload_id)
        selector = (
            Workload.objects.filter(pk=workload_id)
            .values_list("series_selector", flat=True)
            .first()
        )
        if selector:
            where |= Q(pk__in=_selected(cluster_id, selector))
        bindings = ServingBinding.objects.filter(vouched_for(requester_id), workload_id=workload_id)
        for binding in bindings:
            if binding.instance:
                where |= Q(kind=SERVING_KIND, key=binding.key_prefix)
            else:
                where |= Q(kind=SERVING_KIND, key__startswith=binding.key_prefix)
    return list(Entity.objects.filter(where, cluster_id=cluster_id).order_by("key"))


def serving_window(
    *, entities: list[Entity], start: datetime, end: datetime, trust: Trust | None = None
) -> ServingWindow:
    """The serving figures of ``entities`` over ``[start, end]``; with ``trust``, only the
    trusted sources' values count."""
    names = {
        m.pk: m.name
        for m in MetricDefinition.objects.filter(
            Q(name__in=_COUNTERS)
            | Q(name__in=[f"{h}_count" for h in HISTOGRAMS])
            | Q(name__in=[f"{h}_sum" for h in HISTOGRAMS])
            | Q(name__startswith=bucket_prefix("serving_ttft_seconds"))
            | Q(name__startswith=bucket_prefix("serving_tpot_seconds"))
            | Q(name__startswith=bucket_prefix("serving_e2e_seconds"))
        )
    }
    # One counter series per writer: two sources' values of the same series interleaved would
    # read as counter resets (one value per (series, time, source) is stored).
    series: dict[tuple[int, int, int | None], list[float]] = defaultdict(list)
    times: dict[str, set] = defaultdict(set)
    counted: Counter = Counter()
    dropped: Counter = Counter()
    rows = (
        Sample.objects.filter(
            entity__in=[e.pk for e in entities],
            metric_id__in=list(names),
            ts__gte=start,
            ts__lte=end,
        )
        .order_by("ts")
        .values_list("metric_id", "entity_id", "ts", "value", "source_id")
    )
    for metric_id, entity_id, ts, value, source in rows.iterator(chunk_size=5000):
        if trust is not None and source not in trust.source_ids:
            dropped[source] += 1
            continue
        counted[source] += 1
        series[(metric_id, entity_id, source)].append(value)
        name = names[metric_id]
        if "_bucket{" in name:
            times[name.split("_bucket{", 1)[0]].add(ts)
    increases: dict[str, float] = defaultdict(float)
    by_entity: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for (metric_id, entity_id, _source), values in series.items():
        increase = counter_increase(values)
        increases[names[metric_id]] += increase
        if names[metric_id] in _COUNTERS:
            by_entity[entity_id][names[metric_id]] += increase
    failed = increases.get("serving_requests_failed_total", 0.0)
    # Per endpoint, then summed: a workload served by vLLM (success counter) and SGLang
    # (received only) replicas counts each by its own engine's rule.
    requests = sum(finished(own) for own in by_entity.values())
    return ServingWindow(
        start=start,
        end=end,
        endpoints=tuple(e.key for e in entities),
        ttft=figures("serving_ttft_seconds", increases),
        tpot=figures("serving_tpot_seconds", increases),
        e2e=figures("serving_e2e_seconds", increases),
        requests=requests,
        failed=failed,
        scrapes=max((len(t) for t in times.values()), default=0),
        per_endpoint={e.key: finished(by_entity[e.pk]) for e in entities if e.pk in by_entity},
        sources=counts_by_label(counted),
        ignored=counts_by_label(dropped),
    )


def finished(increases: dict[str, float]) -> float:
    """Finished requests: success + failed, or received when no success counter is sent
    (SGLang); the denominator of the error ratio."""
    if "serving_requests_success_total" in increases:
        return increases["serving_requests_success_total"] + increases.get(
            "serving_requests_failed_total", 0.0
        )
    return increases.get("serving_requests_received_total", 0.0)


def figures(histogram: str, increases: dict[str, float]) -> dict[str, float | None]:
    prefix = bucket_prefix(histogram)
    buckets = [(bucket_le(name), inc) for name, inc in increases.items() if name.startswith(prefix)]
    out: dict[str, float | None] = {}
    for label, q in QUANTILES.items():
        value = histogram_quantile(q, buckets) if buckets else float("nan")
        out[label] = None if value != value else value  # NaN: no observations in the window
    count = increases.get(f"{histogram}_count", 0.0)
    total = increases.get(f"{histogram}_sum")
    out["mean"] = total / count if count > 0 and total is not None else None
    return out


def serving_counters_latest(
    *, cluster_id: int, entity_keys: list[str], names: list[str], kind: str = EntityKind.WORKLOAD
) -> dict[tuple[str, str], float]:
    """``{(entity key, metric): newest stored value}`` of serving counters from the last two
    hours (what the twin adds its next step's increments to)."""
    since = timezone.now() - timedelta(hours=2)
    samples = Sample.objects.filter(
        entity__cluster_id=cluster_id,
        entity__kind=kind,
        entity__key__in=entity_keys,
        metric__name__in=names,
        ts__gte=since,
    )
    if connection.vendor == "postgresql":
        samples = samples.order_by("entity_id", "metric_id", "-ts").distinct(
            "entity_id", "metric_id"
        )
    else:  # no DISTINCT ON (SQLite, the demo): keep each series' newest row
        newest = (
            Sample.objects.filter(entity_id=OuterRef("entity_id"), metric_id=OuterRef("metric_id"))
            .order_by("-ts")
            .values("ts")[:1]
        )
        samples = samples.filter(ts=Subquery(newest))
    rows = samples.values_list("entity__key", "metric__name", "value")
    return {(key, name): value for key, name, value in rows}
