"""The JSON batch receiver: a batch of catalogue samples, atomically, at most once.

Validation reads the whole batch before anything is written, so one bad row rejects the
batch with an error naming the row and field. ``Idempotency-Key`` replays
(:mod:`telemetry.ingest.idempotency`, shared with the text receiver) return the first answer
and write nothing; the same key with another payload is refused with 422.
"""

from __future__ import annotations

import math
from datetime import datetime

from django.db import transaction
from django.utils.dateparse import parse_datetime

from accounts.models import Tenant
from inventory.models import Cluster, Workload
from telemetry.catalogue.entities import workload_entity_ensure
from telemetry.catalogue.limits import (
    MAX_BATCH_SAMPLES,
    MAX_CLUSTER_CHARS,
    MAX_ENTITY_KEY_CHARS,
    MAX_METRIC_CHARS,
    check_text,
    check_timestamp,
    check_value,
    time_window,
)
from telemetry.catalogue.registry import entities_check_new, entities_resolve, metrics_by_name
from telemetry.errors import IngestionError
from telemetry.ingest.rows import SampleRow, rows_store
from telemetry.models import EntityKind

ENTITY_KINDS = set(EntityKind.values)


class ForbiddenForToken(IngestionError):
    status_code = 403


def parse_timestamp(value: object, *, row: int, window: tuple[float, float]) -> float:
    """Unix seconds or ISO 8601 with a zone, inside the accepted window (``catalogue.limits``)."""
    if isinstance(value, bool):
        raise IngestionError(
            "ts must be a number (unix seconds) or an ISO 8601 string", row=row, field="ts"
        )
    if isinstance(value, int | float):
        try:
            seconds = float(value)
        except OverflowError:
            seconds = math.inf
    elif isinstance(value, str):
        try:
            parsed: datetime | None = parse_datetime(value[:64])
        except (ValueError, OverflowError):
            parsed = None
        if parsed is None or parsed.tzinfo is None:
            raise IngestionError(
                "ts must be ISO 8601 with a time zone (e.g. 2026-11-29T12:00:00Z)",
                row=row,
                field="ts",
            )
        seconds = parsed.timestamp()
    else:
        raise IngestionError(
            "ts must be a number (unix seconds) or an ISO 8601 string", row=row, field="ts"
        )
    return check_timestamp(seconds, window=window, row=row)


def parse_value(value: object, *, row: int) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IngestionError("value must be a number", row=row, field="value")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    return check_value(number, row=row)


_MAX_CHARS = {
    "metric": MAX_METRIC_CHARS,
    "cluster": MAX_CLUSTER_CHARS,
    "entity_kind": 20,
    "entity": MAX_ENTITY_KEY_CHARS,
}


def _require_str(item: dict, name: str, row: int, default: str | None = None) -> str:
    value = item.get(name, default)
    if not isinstance(value, str) or not value.strip():
        raise IngestionError(
            f"{name} is required and must be a non-empty string", row=row, field=name
        )
    return check_text(value.strip(), field=name, max_chars=_MAX_CHARS[name], row=row)


def ingest_json_batch(
    *, payload: object, tenant: Tenant | None, provenance: int | None = None
) -> dict:
    """Validate and store a JSON batch; ``tenant`` limits a tenant-bound token to its workloads.

    ``provenance`` is the pusher's source (``telemetry.store.provenance.source_for_principal``):
    stored on every row, so gates can tell these values from their trusted sources'.
    """
    if not isinstance(payload, dict) or not isinstance(payload.get("samples"), list):
        raise IngestionError(
            'the body must be a JSON object with a "samples" list', field="samples"
        )
    items = payload["samples"]
    if not items:
        raise IngestionError("samples is empty", field="samples")
    if len(items) > MAX_BATCH_SAMPLES:
        raise IngestionError(f"at most {MAX_BATCH_SAMPLES} samples per batch", field="samples")
    default_cluster = payload.get("cluster")
    window = time_window()
    parsed: list[tuple[str, str, str, str, float, float]] = []
    for row, item in enumerate(items):
        if not isinstance(item, dict):
            raise IngestionError("each sample must be a JSON object", row=row)
        metric = _require_str(item, "metric", row)
        cluster = _require_str(item, "cluster", row, default_cluster)
        kind = _require_str(item, "entity_kind", row)
        if kind not in ENTITY_KINDS:
            raise IngestionError(
                f"unknown entity_kind {kind!r}; one of {', '.join(sorted(ENTITY_KINDS))}",
                row=row,
                field="entity_kind",
            )
        key = _require_str(item, "entity", row)
        parsed.append(
            (
                metric,
                cluster,
                kind,
                key,
                parse_timestamp(item.get("ts"), row=row, window=window),
                parse_value(item.get("value"), row=row),
            )
        )

    metrics = metrics_by_name(p[0] for p in parsed)
    clusters = {c.name: c for c in Cluster.objects.filter(name__in={p[1] for p in parsed})}
    for row, (metric, cluster, kind, _key, _, _) in enumerate(parsed):
        if metric not in metrics:
            raise IngestionError(
                f"unknown metric {metric!r}; see GET /api/v1/metrics/", row=row, field="metric"
            )
        if metrics[metric].mapped and metrics[metric].entity_kind != kind:
            raise IngestionError(
                f"metric {metric!r} describes a {metrics[metric].entity_kind}, not a {kind}",
                row=row,
                field="entity_kind",
            )
        if cluster not in clusters:
            raise IngestionError(
                f"unknown cluster {cluster!r}", row=row, field="cluster", reason="unknown_cluster"
            )
    workloads = _check_workload_entities(parsed, clusters, tenant)

    rows: list[SampleRow] = []
    with transaction.atomic():
        _link_workload_entities(workloads)
        ids: dict[tuple[str, str, str], int] = {}
        refs_by_cluster = {
            name: {(p[2], p[3]) for p in parsed if p[1] == name} for name in clusters
        }
        entities_check_new(
            {clusters[name]: refs for name, refs in refs_by_cluster.items()}, field="entity"
        )
        for name, cluster in clusters.items():
            resolved = entities_resolve(cluster, refs_by_cluster[name])
            ids.update({(name, kind, key): eid for (kind, key), eid in resolved.items()})
        for metric, cluster, kind, key, seconds, value in parsed:
            rows.append((metrics[metric].id, ids[(cluster, kind, key)], seconds, value))
        result = rows_store(rows, provenance=provenance)
    return {
        "accepted": result.received,
        "inserted": result.inserted,
        "duplicates": result.duplicates,
    }


def _check_workload_entities(
    parsed: list, clusters: dict[str, Cluster], tenant: Tenant | None
) -> list[Workload]:
    """Workload samples must name a known workload; tenant tokens may only write their own."""
    workload_refs = {(p[1], p[3]) for p in parsed if p[2] == EntityKind.WORKLOAD}
    workloads = {
        (w.cluster.name, w.name): w
        for w in Workload.objects.filter(
            cluster__in=clusters.values(), name__in={name for _, name in workload_refs}
        ).select_related("cluster")
    }
    for row, (_, cluster, kind, key, _, _) in enumerate(parsed):
        if tenant is not None and kind != EntityKind.WORKLOAD:
            raise ForbiddenForToken(
                f"this token belongs to tenant {tenant.slug!r} and may only send workload samples",
                row=row,
                field="entity_kind",
            )
        if kind != EntityKind.WORKLOAD:
            continue
        workload = workloads.get((cluster, key))
        if workload is None:
            raise IngestionError(
                f"unknown workload {key!r} on cluster {cluster!r}", row=row, field="entity"
            )
        if tenant is not None and workload.tenant_id != tenant.id:
            raise ForbiddenForToken(
                f"workload {key!r} is not your tenant's", row=row, field="entity"
            )
    return list(workloads.values())


def _link_workload_entities(workloads: list[Workload]) -> None:
    """Workload entities carry their workload and tenant so tenant scoping can find them."""
    for workload in workloads:
        workload_entity_ensure(workload)
