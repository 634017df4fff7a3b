"""``/metrics``: the portal's own state in Prometheus text format, for Grafana/Prometheus.

Figures are computed from the database at scrape time, so every web process answers the same
(process-local counters would differ between gunicorn workers).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import BooleanField, Count, ExpressionWrapper
from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.selectors.scoping import principal_sees_all
from cluster_portal.web.request_metrics import register_request_metrics
from inventory.models import Accelerator, Cluster
from telemetry.models import (
    Heartbeat,
    IngestRefusal,
    MetricDefinition,
    PromQLDataSource,
    RemoteWriteStatus,
)
from telemetry.read import accelerators_absent_q
from telemetry.read.local.series import aggregate_by
from telemetry.store.counters import INGESTION_BATCHES, SAMPLES_STORED, counter_totals


class PortalCollector:
    """Collects gauges from the store on each scrape."""

    def collect(self):
        now = timezone.now()
        health = GaugeMetricFamily(
            "portal_accelerators",
            "Accelerators by cluster and health; health=absent: not seen by its exporter for "
            "the cluster's absence threshold (counted there, not under its last health)",
            labels=["cluster", "health"],
        )
        absent_q = accelerators_absent_q(now=now)
        counts: dict[tuple[str, str], int] = {}
        for row in (
            Accelerator.objects.filter(parent__isnull=True)  # MIG slices are not cards
            .annotate(absent=ExpressionWrapper(absent_q, BooleanField()))
            .values("node__cluster__name", "health", "absent")
            .annotate(n=Count("id"))
        ):
            label = "absent" if row["absent"] else Accelerator.Health(row["health"]).name.lower()
            key = (row["node__cluster__name"], label)
            counts[key] = counts.get(key, 0) + row["n"]
        for (cluster_name, label), n in sorted(counts.items()):
            health.add_metric([cluster_name, label], n)
        yield health

        utilization = GaugeMetricFamily(
            "portal_cluster_utilization_ratio",
            "Mean accelerator utilization over the last 5 minutes (mean of per-card means)",
            labels=["cluster"],
        )
        metric = MetricDefinition.objects.filter(name="accelerator_utilization_ratio").first()
        if metric is not None:
            for cluster in Cluster.objects.all():
                means = aggregate_by(
                    metric=metric,
                    cluster_id=cluster.pk,
                    since=now - timedelta(minutes=5),
                    group="cluster",
                )
                if cluster.name in means:
                    utilization.add_metric([cluster.name], means[cluster.name])
        yield utilization

        # Counters summed from the store's running totals (``StoreCounter``), added in the
        # writes' own transactions: every worker and machine answers alike, and rate() reads
        # them as Prometheus does (they replaced windowed "last 5 min" / "last hour" gauges).
        totals = counter_totals()
        stored = CounterMetricFamily(
            "portal_samples_stored",
            "Raw samples stored (committed; duplicates of stored samples not counted)",
        )
        stored.add_metric([], totals.get(SAMPLES_STORED, 0))
        yield stored
        batches = CounterMetricFamily(
            "portal_ingestion_batches",
            "Ingestion requests committed with an Idempotency-Key (replays not counted)",
        )
        batches.add_metric([], totals.get(INGESTION_BATCHES, 0))
        yield batches

        ages = GaugeMetricFamily(
            "portal_process_heartbeat_age_seconds",
            "Seconds since each worker or beat last reported",
            labels=["kind", "name"],
        )
        alive = GaugeMetricFamily("portal_processes_alive", "Processes alive", labels=["kind"])
        counts = {"worker": 0, "beat": 0}
        stale = settings.HEARTBEAT_STALE_AFTER_SECONDS
        for hb in Heartbeat.objects.all():
            age = (now - hb.last_seen).total_seconds()
            ages.add_metric([hb.kind, hb.name], age)
            counts[hb.kind] = counts.get(hb.kind, 0) + (1 if age <= stale else 0)
        for kind, count in counts.items():
            alive.add_metric([kind], count)
        yield ages
        yield alive
        yield from _remote_families()


def _remote_families():
    """Remote-write receive counters and PromQL data-source health, per cluster."""
    received = CounterMetricFamily(
        "portal_remote_write_samples", "Samples received by remote-write", labels=["cluster"]
    )
    inserted = CounterMetricFamily(
        "portal_remote_write_inserted", "Points stored from remote-write", labels=["cluster"]
    )
    rejected = CounterMetricFamily(
        "portal_remote_write_rejected_requests",
        "Remote-write requests answered 4xx",
        labels=["cluster"],
    )
    shed = CounterMetricFamily(
        "portal_remote_write_shed_requests",
        "Remote-write requests answered 503 after waiting past the sender's timeout (resent)",
        labels=["cluster"],
    )
    duplicates = CounterMetricFamily(
        "portal_remote_write_duplicate_points",
        "Remote-write points already stored (a resent batch), skipped",
        labels=["cluster"],
    )
    dropped = CounterMetricFamily(
        "portal_remote_write_dropped_samples",
        "Remote-write samples dropped (families the portal does not map, refused series)",
        labels=["cluster"],
    )
    last_success = GaugeMetricFamily(
        "portal_remote_write_last_success_timestamp_seconds",
        "When the cluster's last remote-write request was stored (time() minus it: the lag)",
        labels=["cluster"],
    )
    for status in RemoteWriteStatus.objects.select_related("cluster"):
        name = status.cluster.name
        received.add_metric([name], status.samples)
        inserted.add_metric([name], status.inserted)
        rejected.add_metric([name], status.rejected)
        shed.add_metric([name], status.shed)
        duplicates.add_metric([name], status.duplicates)
        dropped.add_metric([name], status.dropped)
        if status.last_success_at is not None:
            last_success.add_metric([name], status.last_success_at.timestamp())
    up = GaugeMetricFamily(
        "portal_promql_source_up",
        "1 when the cluster's PromQL data source answered more recently than it failed",
        labels=["cluster"],
    )
    for source in PromQLDataSource.objects.filter(enabled=True).select_related("cluster"):
        failing = source.last_error_at is not None and (
            source.last_success_at is None or source.last_error_at > source.last_success_at
        )
        up.add_metric([source.cluster.name], 0 if failing else 1)
    yield from (received, inserted, rejected, shed, duplicates, dropped, last_success, up)
    yield from _refusal_families()


def _refusal_families():
    """Refused pushes per cluster (``""``: a cluster name the portal does not know), path,
    reason and unit, kept in the database (``IngestRefusal``) so every worker answers alike."""
    refused = CounterMetricFamily(
        "portal_ingest_refused",
        "Samples or whole requests refused by ingestion, per reason (never stored, never merged)",
        labels=["cluster", "path", "reason", "unit"],
    )
    last = GaugeMetricFamily(
        "portal_ingest_last_refusal_timestamp_seconds",
        "When ingestion last refused for this reason (the newest is the last refusal's reason)",
        labels=["cluster", "path", "reason"],
    )
    newest: dict[tuple[str, str, str], float] = {}
    for row in IngestRefusal.objects.all():
        refused.add_metric([row.cluster_name, row.path, row.reason, row.unit], row.count)
        key = (row.cluster_name, row.path, row.reason)
        newest[key] = max(newest.get(key, 0.0), row.last_at.timestamp())
    for key, at in sorted(newest.items()):
        last.add_metric(list(key), at)
    yield from (refused, last)


@extend_schema(exclude=True)  # Prometheus text at /metrics, not part of the JSON API.
class PrometheusMetricsView(APIView):
    """Scrape with a staff session or an operator-level token with the ``read`` scope."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    def get(self, request: Request) -> HttpResponse:
        if not principal_sees_all(request.user):
            raise PermissionDenied("/metrics exposes every tenant's figures: staff only.")
        registry = CollectorRegistry(auto_describe=False)
        registry.register(PortalCollector())
        register_request_metrics(registry)
        return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
