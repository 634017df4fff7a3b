"""Ingesting a Prometheus exposition (dcgm-exporter / npu-exporter) into the store.

The pure mapping lives in :mod:`telemetry.ingest.exposition`; this service registers the
nodes and accelerators it names under the cluster, keeps unmapped exporter metrics under their
own names, and writes everything in one transaction.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from inventory.models import Cluster
from inventory.services import nodes_ensure
from telemetry.errors import IngestionError
from telemetry.ingest.exposition import (
    MAPPED_METRICS,
    MappingReport,
    ParseLimits,
    PrometheusMappingError,
    PrometheusParseError,
    map_exposition,
)
from telemetry.ingest.json_batch import accelerator_health_apply
from telemetry.ingest.limits import (
    MAX_CLUSTER_CHARS,
    MAX_ENTITY_KEY_CHARS,
    check_text,
    check_timestamp,
    check_value,
    time_window,
)
from telemetry.ingest.registry import (
    DeviceRef,
    devices_register,
    entities_check_new,
    metrics_by_name,
    metrics_register_unmapped,
)
from telemetry.models import Entity, EntityKind, MetricDefinition
from telemetry.services.entities import entities_save, entity_build
from telemetry.store.samples import samples_write

SOURCES = ("auto", "dcgm", "npu")
# What the scraper reads at most from one exporter (the same as a push may send).
MAX_BODY_BYTES = settings.INGEST_MAX_BODY_BYTES


def parse_limits() -> ParseLimits:
    return ParseLimits(
        max_lines=settings.INGEST_MAX_LINES,
        max_line_chars=settings.INGEST_MAX_LINE_BYTES,
        max_series=settings.INGEST_MAX_SERIES,
        max_labels=settings.INGEST_MAX_LABELS,
        max_label_value_chars=settings.INGEST_MAX_LABEL_VALUE_CHARS,
    )


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
    *,
    text: str,
    cluster_name: str,
    node: str | None,
    source: str,
    scrape_time: float,
    provenance: int | None = None,
) -> dict:
    """Parse, map and store one exposition; returns accepted/mapped/dropped counts.

    Everything is checked before anything is registered or written: the parse caps, names,
    labels, the sample times and values (``telemetry.ingest.limits``, the same as JSON batches) and
    the registry caps. A refused push registers no metric, node, card or entity.
    ``source`` is the exporter flavour; ``provenance`` who sent it (a ``SampleSource`` id).
    """
    if source not in SOURCES:
        raise IngestionError(f"source must be one of {', '.join(SOURCES)}", field="source")
    if node is not None:
        check_text(node, field="node", max_chars=200)
    cluster = cluster_for_ingest(cluster_name)
    try:
        report = map_exposition(
            text,
            source=source,
            default_host=node,
            scrape_time=scrape_time,
            limits=parse_limits(),
        )
    except (PrometheusParseError, PrometheusMappingError) as exc:
        raise IngestionError(exc.message, row=exc.line, field="body") from exc
    return ingest_mapping_report(report, cluster=cluster, provenance=provenance)


def cluster_for_ingest(cluster_name: str) -> Cluster:
    check_text(cluster_name, field="cluster", max_chars=MAX_CLUSTER_CHARS)
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
    # The same time-window, value and text checks as JSON batches (``telemetry.ingest.limits``).
    window = time_window()
    seen: set[tuple[str, str | None]] = set()
    for sample in report.samples:
        check_timestamp(sample.timestamp, window=window, row=sample.line, field="timestamp")
        check_value(sample.value, row=sample.line)
        names = (("metric", sample.metric), ("Hostname", sample.entity.host))
        described = (("UUID", sample.entity.vendor_id), ("modelName", sample.entity.model_name))
        for field_name, value in (*names, *described):
            if value and (field_name, value) not in seen:
                seen.add((field_name, value))
                check_text(value, field=field_name, max_chars=200, row=sample.line)


def ingest_mapping_report(
    report: MappingReport,
    *,
    cluster: Cluster,
    max_samples: int | None = None,
    provenance: int | None = None,
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
            if len(device.key) > MAX_ENTITY_KEY_CHARS:
                raise IngestionError(
                    f"accelerator key longer than {MAX_ENTITY_KEY_CHARS} characters",
                    row=sample.line,
                    field="UUID",
                )
            devices.setdefault(device.key, device)
        else:
            hosts.add(entity.host)

    with transaction.atomic():
        _catalogue_ensure_mapped()
        new_refs = {(EntityKind.ACCELERATOR, key) for key in devices} | {
            (EntityKind.NODE, host) for host in hosts
        }
        entities_check_new({cluster: new_refs}, field="body")
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
        result = samples_write(rows, provenance=provenance)
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
    nodes = nodes_ensure(cluster=cluster, hosts=hosts, registered_by_exporter=True)
    entities_save(
        entity_build(cluster=cluster, kind=EntityKind.NODE, key=n.hostname, node=n)
        for n in nodes.values()
    )
    return dict(
        Entity.objects.filter(cluster=cluster, kind=EntityKind.NODE, key__in=hosts).values_list(
            "key", "id"
        )
    )
