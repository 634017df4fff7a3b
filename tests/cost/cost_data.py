"""Telemetry written through the real store for the cost and report tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db import transaction

from inventory.models import Accelerator, Cluster, HardwareModel, Node, Workload
from telemetry.models import Entity, EntityKind, MetricDefinition
from telemetry.receivers.twin import samples_write

CLUSTER_METRICS = (
    "cluster_power_watts",
    "cluster_utilization_allocated_ratio",
    "cluster_utilization_busy_ratio",
    "cluster_inference_tokens_per_second",
    "cluster_training_samples_per_second",
    "cluster_hbm_live_ratio",
)


def metric(name: str, kind: str) -> MetricDefinition:
    return MetricDefinition.objects.get_or_create(name=name, defaults={"entity_kind": kind})[0]


def make_cluster(name: str, kind: str, cards: int, tdp: float = 500.0) -> Cluster:
    hw, _ = HardwareModel.objects.get_or_create(
        slug=f"hw-{name}",
        defaults={
            "name": name,
            "vendor": "test",
            "hbm_bytes": 1,
            "hbm_bandwidth_bytes_per_s": 1,
            "peak_flops": 1,
            "tdp_watts": tdp,
            "confidence": "low",
        },
    )
    cluster = Cluster.objects.create(name=name, kind=kind, hardware_model=hw)
    node = Node.objects.create(cluster=cluster, hostname="n0")
    Accelerator.objects.bulk_create(
        [Accelerator(node=node, index=i, vendor_id=f"{name}-{i}") for i in range(cards)]
    )
    return cluster


def minutes_ago(n: int) -> float:
    return (datetime.now(tz=UTC) - timedelta(minutes=n)).timestamp()


def write_cluster(cluster: Cluster, values: dict[str, list[float]]) -> None:
    """One sample per minute for each metric, the newest a minute ago."""
    entity, _ = Entity.objects.get_or_create(
        cluster=cluster, kind=EntityKind.CLUSTER, key="cluster"
    )
    rows = []
    for name, series in values.items():
        m = metric(name, "cluster")
        for i, value in enumerate(reversed(series)):
            rows.append((m.pk, entity.pk, minutes_ago(i + 1), value))
    with transaction.atomic():
        samples_write(rows)


def add_workload(cluster, tenant, name, kind, requested, used: list[float] | None) -> Workload:
    workload = Workload.objects.create(
        tenant=tenant, cluster=cluster, name=name, kind=kind, cards_requested=requested
    )
    entity = Entity.objects.create(
        cluster=cluster, kind=EntityKind.WORKLOAD, key=name, workload=workload, tenant=tenant
    )
    if used:
        m = metric("workload_allocated_cards", "workload")
        with transaction.atomic():
            samples_write([(m.pk, entity.pk, minutes_ago(i + 1), v) for i, v in enumerate(used)])
    return workload
