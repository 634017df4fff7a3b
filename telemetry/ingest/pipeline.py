"""The ingest pipeline: a mapped exporter report (dcgm-exporter / npu-exporter / serving
engines) into the store, whatever wire it came by.

The text receiver (push and scrape, ``telemetry.receivers.text``) and remote-write
(``telemetry.receivers.remote_write``) map their samples with :mod:`telemetry.families.exposition`
and hand the report to :func:`ingest_mapping_report`, which checks it under the shared caps,
registers the nodes, cards and serving endpoints it names under the cluster, keeps unmapped
exporter metrics under their own names, records attribution and health, and writes everything in
one transaction. Rows that need no mapping take ``telemetry.ingest.rows``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.conf import settings
from django.db import transaction

from inventory.models import Cluster
from inventory.services import nodes_ensure
from telemetry.catalogue.entities import entities_save, entity_build
from telemetry.catalogue.known import KNOWN
from telemetry.catalogue.limits import (
    MAX_CLUSTER_CHARS,
    MAX_ENTITY_KEY_CHARS,
    check_text,
    check_timestamp,
    check_value,
    time_window,
)
from telemetry.catalogue.registry import (
    DeviceRef,
    accelerators_seen_by_entity,
    devices_register,
    entities_check_new,
    metrics_by_name,
    metrics_register_unmapped,
)
from telemetry.catalogue.serving_registry import endpoints_register, serving_catalogue_ensure
from telemetry.errors import IngestionError
from telemetry.families.exposition import (
    MAPPED_METRICS,
    MappingReport,
    ParseLimits,
)
from telemetry.families.identity import host_labels_parse, refused
from telemetry.families.serving import SERVING_KIND
from telemetry.ingest.attribution import Holder, Observation, attribution_record
from telemetry.ingest.health import accelerator_health_apply
from telemetry.models import Entity, EntityKind, MetricDefinition
from telemetry.store.samples import StaleReference, StoreResult, samples_write

SOURCES = ("auto", "dcgm", "npu")


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


def host_chain(cluster: Cluster) -> tuple[str, ...]:
    """The labels that name a host for this cluster, first present wins (README, "Chip
    identity"): the cluster's ``host_labels``, else Hostname, hostname, node, instance."""
    return host_labels_parse(cluster.host_labels)


def device_ref(entity) -> DeviceRef:
    """The registry's description of a mapped accelerator entity."""
    return DeviceRef(
        host=entity.host,
        index=entity.index,
        vendor_id=entity.vendor_id,
        model_name=entity.model_name or "",
        attributes=entity.attributes,
        parent_vendor_id=entity.parent_vendor_id,
    )


def last_seen_gap(cluster: Cluster) -> float:
    """How often one process rewrites a card's ``last_seen`` (every row update per scrape was
    a tenth of the receiver's database time). With the default absence threshold (4 scrape
    intervals) every second scrape, so ``last_seen`` lags by less than 2 intervals and a card
    still reporting is never shown absent; with a tighter threshold, every scrape (lag under
    half an interval)."""
    interval = cluster.scrape_interval_seconds
    return interval * (1.5 if cluster.absent_after_intervals >= 4 else 0.5)


def cluster_for_ingest(cluster_name: str) -> Cluster:
    check_text(cluster_name, field="cluster", max_chars=MAX_CLUSTER_CHARS)
    cluster = Cluster.objects.filter(name=cluster_name).first()
    if cluster is None:
        raise IngestionError(
            f"unknown cluster {cluster_name!r}", field="cluster", reason="unknown_cluster"
        )
    return cluster


def mapping_report_check(report: MappingReport, *, max_samples: int | None = None) -> None:
    """The hook for the limits every exporter ingestion path shares, applied to the mapped
    samples before anything is written (text push, scrape and remote-write all pass here):
    raise ``IngestionError`` (a 4xx) to refuse the request."""
    if max_samples is not None and len(report.samples) > max_samples:
        raise IngestionError(
            f"at most {max_samples:,} samples per request, got {len(report.samples):,}",
            field="body",
            reason="too_many_samples",
        )
    # The same time-window, value and text checks as JSON batches (``telemetry.catalogue.limits``).
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
    screened: bool = False,
) -> dict:
    """Register the nodes and cards a mapped exposition names and store its samples, in one
    transaction; the answer counts accepted/mapped/dropped and inserted/duplicates.

    ``screened``: the caller already dropped every sample :func:`mapping_report_check` would
    refuse (remote-write's ``report_screen``), so only the sample cap is checked again.

    Metric, card and node ids already resolved by this process come from the memo
    (``telemetry.catalogue.known``); only what it does not know is looked up or registered. A
    memo entry pointing at a row deleted since fails the insert's reference check
    (``StaleReference``): the memo is cleared and the batch written again from the database,
    once."""
    if not screened:
        mapping_report_check(report, max_samples=max_samples)
    elif max_samples is not None and len(report.samples) > max_samples:
        raise IngestionError(
            f"at most {max_samples:,} samples per request, got {len(report.samples):,}",
            field="body",
        )
    devices: dict[tuple, DeviceRef] = {}
    hosts: set[str] = set()
    endpoints: set[str] = set()  # serving endpoints (telemetry.families.serving)
    # The labels a host's series carry, for the cluster's topology mapping (a ``rack`` label
    # Prometheus relabels onto every series of a target): a host's first series is enough.
    host_labels: dict[str, dict[str, str]] = {}
    for sample in report.samples:
        entity = sample.entity
        if entity.host not in host_labels:
            host_labels[entity.host] = sample.extra_labels
        if entity.kind == "accelerator":
            ident = (entity.host, entity.index, entity.vendor_id, entity.model_name)
            if ident in devices:
                continue
            device = device_ref(entity)
            if len(device.key) > MAX_ENTITY_KEY_CHARS:
                raise IngestionError(
                    f"accelerator key longer than {MAX_ENTITY_KEY_CHARS} characters",
                    row=sample.line,
                    field="UUID",
                )
            devices[ident] = device
        elif entity.kind == SERVING_KIND:
            endpoints.add(entity.vendor_id)
        else:
            hosts.add(entity.host)
    try:
        with transaction.atomic():
            rows, result = _report_store(
                report, cluster, devices, hosts, host_labels, provenance, endpoints
            )
    except StaleReference:
        KNOWN.clear()  # a memo entry named a row deleted since: resolve everything again
        with transaction.atomic():
            rows, result = _report_store(
                report, cluster, devices, hosts, host_labels, provenance, endpoints
            )
    body = report.as_dict()
    # Series that differ only in labels we do not key on (histogram bucket, XID err_code, the
    # pod of a time-sliced GPU) land on the same point; the last one wins. Say so.
    collapsed = len(rows) - len({(m, e, t) for m, e, t, _ in rows})
    body.update(
        {
            "collapsed_same_point": collapsed,
            "inserted": result.inserted,
            "duplicates": result.duplicates,
            "accelerators": len({d.key for d in devices.values()}),
            "nodes": len({d.host for d in devices.values()} | hosts),
            "refused": refused(report.dropped),
        }
    )
    return body


def _report_metric_ids(report: MappingReport) -> dict[str, int]:
    names = {s.metric for s in report.samples}
    metric_ids = KNOWN.get_many("metric", names)
    missing = names - metric_ids.keys()
    if missing:
        _catalogue_ensure_mapped()
        serving_catalogue_ensure(missing)
        unmapped = {
            s.metric: (s.entity.kind, s.source_name)
            for s in report.samples
            if not s.mapped and s.metric in missing
        }
        metrics_register_unmapped(unmapped)
        found = {name: m.id for name, m in metrics_by_name(missing).items()}
        KNOWN.put_after_commit("metric", found)
        metric_ids.update(found)
    return metric_ids


def _report_store(
    report: MappingReport,
    cluster: Cluster,
    devices: dict[tuple, DeviceRef],
    hosts: set[str],
    host_labels: dict[str, dict[str, str]],
    provenance: int | None,
    endpoints: set[str] = frozenset(),
) -> tuple[list, StoreResult]:
    """Resolve (registering what is new) and write; the caller owns the transaction."""
    cluster_id = cluster.id
    device_ids = {
        ident: entity_id
        for ident, entity_id in KNOWN.get_many(
            "device", [(cluster_id, *ident) for ident in devices]
        ).items()
    }
    device_ids = {ident[1:]: entity_id for ident, entity_id in device_ids.items()}
    node_ids = {
        k[1]: v for k, v in KNOWN.get_many("node", [(cluster_id, h) for h in hosts]).items()
    }
    new_devices = {ident: d for ident, d in devices.items() if ident not in device_ids}
    new_hosts = hosts - node_ids.keys()
    endpoint_ids = {
        k[2]: v
        for k, v in KNOWN.get_many(
            "entity", [(cluster_id, SERVING_KIND, key) for key in endpoints]
        ).items()
    }
    new_endpoints = endpoints - endpoint_ids.keys()
    if new_devices or new_hosts or new_endpoints:
        new_refs = {(EntityKind.ACCELERATOR, d.key) for d in new_devices.values()} | {
            (EntityKind.NODE, host) for host in new_hosts
        }
        new_refs |= {(SERVING_KIND, key) for key in new_endpoints}
        entities_check_new({cluster: new_refs}, field="body")
    metric_ids = _report_metric_ids(report)
    newest = max((s.timestamp for s in report.samples), default=None)
    seen_at = datetime.fromtimestamp(newest, tz=UTC) if newest is not None else None
    if new_devices:
        by_key = devices_register(
            cluster, new_devices.values(), seen_at=seen_at, labels=host_labels
        )
        registered = {ident: by_key[d.key] for ident, d in new_devices.items()}
        device_ids.update(registered)
        KNOWN.put_after_commit("device", {(cluster_id, *i): v for i, v in registered.items()})
        KNOWN.put_after_commit(
            "entity",
            {
                (cluster_id, EntityKind.ACCELERATOR, d.key): by_key[d.key]
                for d in new_devices.values()
            },
        )
    if new_hosts:
        registered_nodes = _nodes_register(cluster, new_hosts, host_labels)
        node_ids.update(registered_nodes)
        KNOWN.put_after_commit("node", {(cluster_id, h): v for h, v in registered_nodes.items()})
        KNOWN.put_after_commit(
            "entity", {(cluster_id, EntityKind.NODE, h): v for h, v in registered_nodes.items()}
        )
    if new_endpoints:
        registered_endpoints = endpoints_register(cluster, new_endpoints)
        endpoint_ids.update(registered_endpoints)
        KNOWN.put_after_commit(
            "entity",
            {(cluster_id, SERVING_KIND, k): v for k, v in registered_endpoints.items()},
        )
    rows = []
    health: dict[int, int] = {}
    slices: set[int] = set()  # entity ids of MIG slices with a health sample
    # (card, time) -> the holder labels of its series and its host
    held: dict[tuple[int, float], tuple[dict[str, str], str | None]] = {}
    append = rows.append
    for sample in report.samples:
        entity = sample.entity
        if entity.kind == "accelerator":
            entity_id = device_ids[(entity.host, entity.index, entity.vendor_id, entity.model_name)]
            held[(entity_id, sample.timestamp)] = (sample.attribution, entity.host)
        elif entity.kind == SERVING_KIND:
            entity_id = endpoint_ids[entity.vendor_id]
        else:
            entity_id = node_ids[entity.host]
        append((metric_ids[sample.metric], entity_id, sample.timestamp, sample.value))
        if sample.metric == "accelerator_health_status":
            health[entity_id] = int(sample.value)
            if entity.parent_vendor_id:
                slices.add(entity_id)
    result = samples_write(rows, provenance=provenance, check_now=True)
    accelerator_health_apply(health, slices=slices)
    # Who held each card (pod / Slurm job labels) as intervals, in the same transaction.
    attribution_record(
        cluster_id=cluster_id,
        observations=(
            Observation(card, ts, Holder.from_labels(labels, host=host))
            for (card, ts), (labels, host) in held.items()
        ),
        source=provenance,
    )
    if seen_at is not None and device_ids:
        accelerators_seen_by_entity(  # one UPDATE, of the cards not marked seen just now
            set(device_ids.values()),
            seen_at=seen_at,
            min_gap_seconds=last_seen_gap(cluster),
        )
    return rows, result


def _nodes_register(
    cluster: Cluster, hosts: set[str], labels: dict[str, dict[str, str]]
) -> dict[str, int]:
    nodes = nodes_ensure(cluster=cluster, hosts=hosts, labels=labels, registered_by_exporter=True)
    entities_save(
        entity_build(cluster=cluster, kind=EntityKind.NODE, key=n.hostname, node=n)
        for n in nodes.values()
    )
    return dict(
        Entity.objects.filter(cluster=cluster, kind=EntityKind.NODE, key__in=hosts).values_list(
            "key", "id"
        )
    )
