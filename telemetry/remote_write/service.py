"""The remote-write receiver's service: decode, map, store, count.

A request goes through the same mapping (:func:`map_samples`) and the same store function
(:func:`ingest_mapping_report`) as pushed or scraped exporter text, so DCGM and npu-exporter
label quirks, host/UUID/vdie_id and health behave alike. Prometheus retries a 5xx and drops a
4xx, hence:

- **idempotent**: points are unique per ``(metric, entity, time)`` and written with
  ``ON CONFLICT DO NOTHING``, so a resent batch inserts nothing (counted as duplicates);
- **4xx for bad input** (not snappy, not a WriteRequest, too large, unknown cluster), never a
  5xx that would make Prometheus resend it forever;
- a sample that cannot be attributed or is out of the accepted time window is *dropped and
  counted*, not a reason to refuse the batch (that would lose its good samples too).
"""

from __future__ import annotations

import time

from django.db.models import F
from django.utils import timezone

from inventory.models import Cluster
from telemetry.errors import IngestionError
from telemetry.ingest import MAX_BATCH_SAMPLES
from telemetry.ingestion.prometheus import map_samples
from telemetry.ingestion.prometheus_parse import ParsedSample
from telemetry.limits import time_window
from telemetry.models import RemoteWriteStatus
from telemetry.prometheus_ingest import SOURCES, cluster_for_ingest, ingest_mapping_report
from telemetry.remote_write.decode import RemoteWriteError, decode_write_request

# Prometheus sends at most ``max_samples_per_send`` (2,000 by default) samples per request,
# a few hundred kB uncompressed; these bounds leave ample room for tuned senders.
MAX_COMPRESSED_BYTES = 16 * 1024 * 1024
MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024
MAX_SAMPLES = MAX_BATCH_SAMPLES
HOST_LABELS = ("instance",)  # Prometheus' target label, ``host:port``: the host of last resort


class RemoteWriteRejected(IngestionError):
    """A 4xx whose status is chosen by the check that failed (400, 413, 415)."""

    def __init__(self, message: str, *, status: int = 400, field: str | None = "body"):
        super().__init__(message, field=field)
        self.status_code = status
        self.code = {413: "too_large", 415: "unsupported_media_type"}.get(status, "invalid")


def _in_window(samples: list[ParsedSample], now: float) -> tuple[list[ParsedSample], int]:
    """Samples inside the window every ingestion path accepts (``telemetry.limits``)."""
    earliest, latest = time_window(now)
    low, high = earliest * 1000, latest * 1000
    kept = [s for s in samples if s.timestamp_ms is not None and low <= s.timestamp_ms <= high]
    return kept, len(samples) - len(kept)


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
    if len(body) > MAX_COMPRESSED_BYTES:
        raise RemoteWriteRejected(
            f"body is {len(body):,} bytes, over the limit of {MAX_COMPRESSED_BYTES:,}", status=413
        )
    try:
        samples = decode_write_request(body, max_uncompressed_bytes=MAX_UNCOMPRESSED_BYTES)
    except RemoteWriteError as exc:
        raise RemoteWriteRejected(exc.message, status=exc.status, field=exc.field) from None
    if len(samples) > MAX_SAMPLES:
        raise RemoteWriteRejected(
            f"at most {MAX_SAMPLES:,} samples per request, got {len(samples):,}", status=413
        )
    now = time.time()
    samples, out_of_window = _in_window(samples, now)
    report = map_samples(
        samples,
        source=source,
        default_host=node,
        scrape_time=now,
        host_labels=HOST_LABELS,
        exporter_only=True,
    )
    if out_of_window:
        report.dropped["timestamp_out_of_range"] = out_of_window
    body_out = ingest_mapping_report(
        report, cluster=cluster, max_samples=MAX_SAMPLES, provenance=provenance
    )
    body_out["series"] = len({s.line for s in samples})
    body_out["received"] = len(samples) + out_of_window
    return body_out


def remote_write_record(
    *, cluster_name: str, result: dict | None = None, error: str | None = None
) -> None:
    """Add one request to the cluster's receive counters (after the samples committed, so
    concurrent shards do not serialise on this row while writing)."""
    cluster_id = Cluster.objects.filter(name=cluster_name).values_list("id", flat=True).first()
    if cluster_id is None:
        return  # unknown cluster: nothing to count against
    now = timezone.now()
    RemoteWriteStatus.objects.get_or_create(cluster_id=cluster_id)
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
    RemoteWriteStatus.objects.filter(cluster_id=cluster_id).update(**updates)
