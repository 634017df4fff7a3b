"""The remote-write receiver's service: decode, map, store, count.

A request goes through the same mapping (:func:`map_samples`) and the same store function
(:func:`ingest_mapping_report`) as pushed or scraped exporter text, so DCGM and npu-exporter
label quirks, host/UUID/vdie_id and health behave alike. Prometheus retries a 5xx and drops a
4xx, hence:

- **idempotent**: points are unique per ``(metric, entity, time)`` and written with
  ``ON CONFLICT DO NOTHING``, so a resent batch inserts nothing (counted as duplicates);
- **4xx for bad input** (not snappy, not a WriteRequest, too large, unknown cluster), never a
  5xx that would make Prometheus resend it forever;
- **bounded before decoding**: the body and its snappy-declared uncompressed size are capped
  (``INGEST_REMOTE_WRITE_MAX_BYTES``, 8 MiB) and the series and samples counted on the wire
  before anything is built (:mod:`telemetry.receivers.remote_write.decode`);
- a series or sample that cannot be attributed, is out of the accepted time window, has too
  many labels (``INGEST_MAX_LABELS``, as for text), a label or name too long or holding a
  control character, a value out of range, or names a new card beyond the new-entity caps is
  *dropped and counted per reason* in the reply, not a reason to refuse the batch (that would
  lose its good samples too, for good).
"""

from __future__ import annotations

import time

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from inventory.models import Cluster
from telemetry.catalogue.known import KNOWN
from telemetry.catalogue.limits import (
    MAX_BATCH_SAMPLES,
    MAX_ENTITY_KEY_CHARS,
    limit,
    text_problem,
    time_window,
)
from telemetry.catalogue.refusals import refusals_record, refusals_record_reply
from telemetry.catalogue.registry import entities_new_allowed
from telemetry.errors import IngestionError
from telemetry.families.exposition import EntityRef, MappingReport, map_samples
from telemetry.families.identity import Refusal
from telemetry.families.parse import ParsedSample
from telemetry.ingest.pipeline import (
    SOURCES,
    cluster_for_ingest,
    host_chain,
    ingest_mapping_report,
)
from telemetry.models import EntityKind, IngestRefusal, RemoteWriteStatus
from telemetry.receivers.remote_write.decode import (
    DecodeLimits,
    RemoteWriteError,
    decode_write_request,
)

MAX_SAMPLES = MAX_BATCH_SAMPLES


def decode_limits() -> DecodeLimits:
    """Remote-write's bounds: its own size cap, and the label and series caps of every path."""
    return DecodeLimits(
        max_uncompressed_bytes=settings.INGEST_REMOTE_WRITE_MAX_BYTES,
        max_series=settings.INGEST_MAX_SERIES,
        max_samples=MAX_SAMPLES,
        max_labels=settings.INGEST_MAX_LABELS,
        max_label_value_chars=settings.INGEST_MAX_LABEL_VALUE_CHARS,
    )


class RemoteWriteRejected(IngestionError):
    """A 4xx whose status is chosen by the check that failed (400, 413, 415)."""

    def __init__(self, message: str, *, status: int = 400, field: str | None = "body"):
        reason = {413: "too_large"}.get(status, "invalid_body")
        super().__init__(message, field=field, reason=reason)
        self.status_code = status
        self.code = {413: "too_large", 415: "unsupported_media_type"}.get(status, "invalid")


def _in_window(samples: list[ParsedSample], now: float) -> tuple[list[ParsedSample], int]:
    """Samples inside the window every ingestion path accepts (``telemetry.catalogue.limits``)."""
    earliest, latest = time_window(now)
    low, high = earliest * 1000, latest * 1000
    kept = [s for s in samples if s.timestamp_ms is not None and low <= s.timestamp_ms <= high]
    return kept, len(samples) - len(kept)


def _count(dropped: dict[str, int], reason: str, n: int = 1) -> None:
    dropped[reason] = dropped.get(reason, 0) + n


def _sample_problem(
    sample, text_ok: dict[str, str | None], max_abs: float | None = None
) -> str | None:
    """What would make the text path refuse its whole push (``mapping_report_check``,
    ``ingest_mapping_report``), as a drop reason for this one sample. ``text_ok`` memoises
    the text checks per string within a request (a card's UUID recurs in all its series)."""
    if abs(sample.value) > (limit("TELEMETRY_MAX_ABS_VALUE") if max_abs is None else max_abs):
        return "value_out_of_range"
    entity = sample.entity
    for value in (sample.metric, entity.host, entity.vendor_id, entity.model_name):
        if not value:
            continue
        if value in text_ok:
            problem = text_ok[value]
        else:
            problem = text_ok[value] = text_problem(value, max_chars=200) or None
        if problem:
            return problem
    if entity.kind == "accelerator" and len(entity.vendor_id) > MAX_ENTITY_KEY_CHARS:
        return "entity_key_too_long"
    return None


def _ref(sample) -> tuple[str, str]:
    entity = sample.entity
    if entity.kind == "accelerator":
        return (EntityKind.ACCELERATOR, entity.vendor_id)  # the chip id (DeviceRef.key)
    if entity.kind == EntityKind.SERVING_ENDPOINT:
        return (EntityKind.SERVING_ENDPOINT, entity.vendor_id)  # model@instance
    return (EntityKind.NODE, entity.host)


def _allowed_refs(cluster: Cluster, refs: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """``entities_new_allowed`` for the refs the memo does not already know to exist."""
    unique = list(dict.fromkeys(refs))
    known = KNOWN.get_many("entity", [(cluster.id, kind, key) for kind, key in unique])
    allowed = {(kind, key) for _, kind, key in known}
    unknown = [ref for ref in unique if ref not in allowed]
    if unknown:
        allowed |= entities_new_allowed(cluster, unknown)
    return allowed


def report_screen(report: MappingReport, *, cluster: Cluster) -> None:
    """Drop and count, per reason, the samples that would refuse the whole batch on the
    other paths: a name or label too long or holding a control character, a value out of
    range, and samples of new cards or nodes beyond the new-entity caps. Prometheus drops a
    refused batch for good, so one bad series must not cost the good ones."""
    kept = []
    refs = []
    text_ok: dict[str, str | None] = {}
    max_abs = limit("TELEMETRY_MAX_ABS_VALUE")  # a settings lookup, once per request
    ref_of: dict[EntityRef, tuple[str, str]] = {}
    for sample in report.samples:
        problem = _sample_problem(sample, text_ok, max_abs)
        if problem is None:
            ref = ref_of.get(sample.entity)
            if ref is None:
                ref = ref_of[sample.entity] = _ref(sample)
            kept.append((sample, ref))
            refs.append(ref)
        else:
            _count(report.dropped, problem)
    allowed = _allowed_refs(cluster, refs)
    report.samples = []
    for sample, ref in kept:
        if ref in allowed:
            report.samples.append(sample)
        else:
            _count(report.dropped, "too_many_new_entities")
    report.accepted = len(report.samples)
    report.mapped = sum(1 for s in report.samples if s.mapped)
    report.unmapped_kept = report.accepted - report.mapped


def ingest_remote_write(
    *,
    body: bytes,
    cluster_name: str,
    node: str | None = None,
    source: str = "auto",
    provenance: int | None = None,
) -> dict:
    """Decode one WriteRequest and store its dcgm/npu-exporter samples; returns the report.

    ``provenance``: the sending token's source — a Prometheus remote-writing is a token's
    push, trusted by a gate only when its criterion names that token."""
    if source not in SOURCES:
        raise IngestionError(f"source must be one of {', '.join(SOURCES)}", field="source")
    cluster = cluster_for_ingest(cluster_name)
    limits = decode_limits()
    if len(body) > limits.max_uncompressed_bytes:
        # Snappy never shrinks data much below its input, so this is the compressed cap too.
        raise RemoteWriteRejected(
            f"body is {len(body):,} bytes, over the limit of {limits.max_uncompressed_bytes:,}",
            status=413,
        )
    try:
        decoded = decode_write_request(body, limits=limits)
    except RemoteWriteError as exc:
        raise RemoteWriteRejected(exc.message, status=exc.status, field=exc.field) from None
    now = time.time()
    samples, out_of_window = _in_window(decoded.samples, now)
    report = map_samples(
        samples,
        source=source,
        default_host=node,
        scrape_time=now,
        host_chain=host_chain(cluster),
        exporter_only=True,
    )
    for reason, count in decoded.dropped_samples.items():
        _count(report.dropped, reason, count)
    if out_of_window:
        report.dropped["timestamp_out_of_range"] = out_of_window
    report_screen(report, cluster=cluster)
    body_out = ingest_mapping_report(
        report, cluster=cluster, max_samples=MAX_SAMPLES, provenance=provenance, screened=True
    )
    body_out["series"] = len({s.line for s in samples})  # series with in-window samples
    body_out["dropped_series"] = dict(decoded.dropped_series)
    body_out["received"] = len(samples) + out_of_window + sum(decoded.dropped_samples.values())
    return body_out


def remote_write_cluster_known(*, cluster_name: str) -> bool:
    """Whether a cluster of that name exists (asked only when a request would be shed)."""
    return bool(cluster_name) and Cluster.objects.filter(name=cluster_name).exists()


def remote_write_shed_record(*, cluster_name: str) -> None:
    """Count a request shed with a 503 (one statement; nothing else is read or written for a
    request the server is too far behind to take)."""
    RemoteWriteStatus.objects.filter(cluster__name=cluster_name).update(
        requests=F("requests") + 1, shed=F("shed") + 1, last_seen_at=timezone.now()
    )


def remote_write_record(
    *,
    cluster_name: str,
    result: dict | None = None,
    error: str | None = None,
    reason: str | None = None,
) -> None:
    """Add one request to the cluster's receive counters (after the samples committed, so
    concurrent shards do not serialise on this row while writing) and its refusals to the
    per-reason counters (``telemetry.catalogue.refusals``; an unknown cluster's too; a
    request that refused nothing costs no query there)."""
    path = IngestRefusal.Path.REMOTE_WRITE
    if error is not None:
        refusals_record(
            cluster_name=cluster_name,
            path=path,
            counts={reason or Refusal.INVALID_BODY: 1},
            unit=IngestRefusal.Unit.REQUESTS,
            message=error,
        )
    elif result:
        refusals_record_reply(cluster_name=cluster_name, path=path, reply=result)
    now = timezone.now()
    updates: dict = {"requests": F("requests") + 1, "last_seen_at": now}
    if error is not None:
        updates.update(rejected=F("rejected") + 1, last_error=error[:2000], last_error_at=now)
    else:
        result = result or {}
        updates.update(
            samples=F("samples") + result.get("received", 0),
            inserted=F("inserted") + result.get("inserted", 0),
            duplicates=F("duplicates") + result.get("duplicates", 0),
            dropped=F("dropped") + sum(result.get("dropped", {}).values()),
            last_success_at=now,
            last_counts=result,
        )
    # One statement in the common case (the cluster's row exists): every shard of every
    # Prometheus updates this row, so it is touched once, briefly, per request.
    if RemoteWriteStatus.objects.filter(cluster__name=cluster_name).update(**updates):
        return
    cluster_id = Cluster.objects.filter(name=cluster_name).values_list("id", flat=True).first()
    if cluster_id is None:
        return  # unknown cluster: counted as a refusal above, no receive counters
    RemoteWriteStatus.objects.get_or_create(cluster_id=cluster_id)
    RemoteWriteStatus.objects.filter(cluster_id=cluster_id).update(**updates)
