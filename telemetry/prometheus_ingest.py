"""Ingesting a Prometheus exposition (dcgm-exporter / npu-exporter) into the store.

The pure mapping lives in :mod:`telemetry.ingestion.prometheus`; this service registers the
nodes and accelerators it names under the cluster, keeps unmapped exporter metrics under their
own names, and writes everything in one transaction.
"""

from __future__ import annotations

from django.db import transaction

from inventory.models import Cluster, Node
from telemetry.errors import IngestionError
from telemetry.ingest import accelerator_health_apply
from telemetry.ingestion.prometheus import (
    MAPPED_METRICS,
    MappingReport,
    PrometheusMappingError,
    PrometheusParseError,
    map_exposition,
)
from telemetry.models import Entity, EntityKind, MetricDefinition
from telemetry.registry import (
    DeviceRef,
    devices_register,
    metrics_by_name,
    metrics_register_unmapped,
)
from telemetry.services.entities import entities_save, entity_build
from telemetry.store import samples_write

SOURCES = ("auto", "dcgm", "npu")
MAX_BODY_BYTES = 20 * 1024 * 1024


def _catalogue_ensure_mapped() -> None:
    existing = set(
        MetricDefinition.objects.filter(name__in=MAPPED_METRICS).values_list("name", flat=True)
    )
    MetricDefinition.objects.bulk_create(
        [
            MetricDefinition(
                name=name,
                unit=unit,
                description=description,
                entity_kind="node" if name.startswith("node_") else "accelerator",
                type="counter" if name.endswith("_total") else "gauge",
            )
            for name, (unit, description) in MAPPED_METRICS.items()
            if name not in existing
        ],
        ignore_conflicts=True,
    )


def ingest_prometheus_text(
    *, text: str, cluster_name: str, node: str | None, source: str, scrape_time: float
) -> dict:
    """Parse, map and store one exposition; returns accepted/mapped/dropped counts."""
    if source not in SOURCES:
        raise IngestionError(f"source must be one of {', '.join(SOURCES)}", field="source")
    cluster = cluster_for_ingest(cluster_name)
    try:
        report = map_exposition(text, source=source, default_host=node, scrape_time=scrape_time)
    except (PrometheusParseError, PrometheusMappingError) as exc:
        raise IngestionError(exc.message, row=exc.line, field="body") from exc
    return ingest_mapping_report(report, cluster=cluster)


def cluster_for_ingest(cluster_name: str) -> Cluster:
    cluster = Cluster.objects.filter(name=cluster_name).first()
    if cluster is None:
        raise IngestionError(f"unknown cluster {cluster_name!r}", field="cluster")
    return cluster


def mapping_report_check(report: MappingReport, *, max_samples: int | None = None) -> None:
    """The hook for the limits every exporter ingestion path shares, applied to the mapped
    samples before anything is written (text push, scrape and remote-write all pass here):
    raise ``IngestionError`` (a 4xx) to refuse the request."""
    if max_samples is not None and len(report.samples) > max_samples:
        raise IngestionError(
            f"at most {max_samples:,} samples per request, got {len(report.samples):,}",
            field="body",
        )


def ingest_mapping_report(
    report: MappingReport, *, cluster: Cluster, max_samples: int | None = None
) -> dict:
    """Register the nodes and cards a mapped exposition names and store its samples, in one
    transaction; the answer counts accepted/mapped/dropped and inserted/duplicates."""
    mapping_report_check(report, max_samples=max_samples)
    devices: dict[str, DeviceRef] = {}
    hosts: set[str] = set()
    for sample in report.samples:
        entity = sample.entity
        if entity.kind == "accelerator":
            device = DeviceRef(
                host=entity.host,
                index=entity.index,
                vendor_id=entity.vendor_id,
                model_name=entity.model_name or "",
            )
            devices.setdefault(device.key, device)
        else:
            hosts.add(entity.host)

    with transaction.atomic():
        _catalogue_ensure_mapped()
        unmapped = {
            s.metric: (s.entity.kind, s.source_name) for s in report.samples if not s.mapped
        }
        metrics_register_unmapped(unmapped)
        metrics = metrics_by_name({s.metric for s in report.samples})
        device_entities = devices_register(cluster, devices.values()) if devices else {}
        node_entities = _nodes_register(cluster, hosts) if hosts else {}
        rows = []
        health: dict[int, int] = {}
        for sample in report.samples:
            entity = sample.entity
            if entity.kind == "accelerator":
                key = DeviceRef(entity.host, entity.index, entity.vendor_id).key
                entity_id = device_entities[key]
            else:
                entity_id = node_entities[entity.host]
            rows.append((metrics[sample.metric].id, entity_id, sample.timestamp, sample.value))
            if sample.metric == "accelerator_health_status":
                health[entity_id] = int(sample.value)
        result = samples_write(rows)
        accelerator_health_apply(health)
    body = report.as_dict()
    # Series that differ only in labels we do not key on (MIG instance, histogram bucket, XID
    # err_code) land on the same point; the last one wins. Say so instead of hiding it.
    collapsed = len(rows) - len({(m, e, t) for m, e, t, _ in rows})
    body.update(
        {
            "collapsed_same_point": collapsed,
            "inserted": result.inserted,
            "duplicates": result.duplicates,
            "accelerators": len(devices),
            "nodes": len({d.host for d in devices.values()} | hosts),
        }
    )
    return body


def _nodes_register(cluster: Cluster, hosts: set[str]) -> dict[str, int]:
    Node.objects.bulk_create(
        [Node(cluster=cluster, hostname=h, registered_by_exporter=True) for h in sorted(hosts)],
        ignore_conflicts=True,
    )
    nodes = Node.objects.filter(cluster=cluster, hostname__in=hosts).select_related("rack")
    entities_save(
        entity_build(cluster=cluster, kind=EntityKind.NODE, key=n.hostname, node=n) for n in nodes
    )
    return dict(
        Entity.objects.filter(cluster=cluster, kind=EntityKind.NODE, key__in=hosts).values_list(
            "key", "id"
        )
    )
