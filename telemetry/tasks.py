"""Telemetry's Celery tasks. Every task states its delivery options explicitly.

Task names keep their historical ``monitoring.`` prefix: a name is a wire format, and a message
queued before an upgrade must still find its task afterwards.
"""

from __future__ import annotations

import socket

from celery import shared_task
from django.utils import timezone

from telemetry.catalogue.heartbeats import heartbeat_record
from telemetry.read.local.exporters import exporter_targets_due
from telemetry.read.promql.client import DataSourceUnavailable
from telemetry.read.promql.reads import sources
from telemetry.receivers.promql_sync import promql_source_sync
from telemetry.receivers.scrape import (
    SCRAPE_SOFT_TIME_LIMIT_SECONDS,
    SCRAPE_TIME_LIMIT_SECONDS,
    exporter_scrape,
    exporter_target_claim,
)
from telemetry.store.compaction import rollups_compact
from telemetry.store.frame_close import frames_rollups_close
from telemetry.store.retention import RetentionPolicy, telemetry_prune


@shared_task(
    name="monitoring.heartbeat",
    bind=True,
    acks_late=True,
    # A heartbeat is only worth something when fresh; a late one would lie about liveness.
    expires=30,
    max_retries=0,
    ignore_result=False,
)
def heartbeat(self) -> dict:
    """Record that the worker executing this task is alive."""
    worker = self.request.hostname or f"worker@{socket.gethostname()}"
    record = heartbeat_record(kind="worker", name=worker)
    return {"worker": worker, "at": timezone.now().isoformat(), "beats": record.beats}


@shared_task(
    name="monitoring.telemetry_retention",
    acks_late=True,
    # Idempotent: a late or repeated run deletes what is expired at that moment, nothing more.
    expires=600,
    max_retries=0,
)
def telemetry_retention() -> dict[str, int]:
    """Delete raw samples and rollups older than settings.TELEMETRY_RETENTION."""
    return telemetry_prune(policy=RetentionPolicy.from_settings())


@shared_task(
    name="monitoring.scrape_due_targets",
    acks_late=True,
    # Beat sends this every 5 s; a copy that waited longer than that is superseded by the
    # next one, and replaying a backlog would only fan out duplicates the claim then skips.
    expires=5,
    # The next beat is the retry: retrying a fan-out would only race the schedule.
    max_retries=0,
)
def scrape_due_targets() -> dict[str, int]:
    """Dispatch one ``monitoring.scrape_target`` per enabled target that is due."""
    due = exporter_targets_due()
    for target_id in due:
        scrape_target.delay(target_id)
    return {"dispatched": len(due)}


@shared_task(
    name="monitoring.scrape_target",
    acks_late=True,
    # A scrape queued behind a stopped worker for 30 s is stale; the next beat dispatches a
    # fresh one. Several queued copies for one target are harmless: the claim lets one run.
    expires=30,
    # A failed scrape is recorded on the target and the next interval is the retry; retrying
    # at once would hammer a struggling exporter and skew the interval.
    max_retries=0,
    # The fetch has its own wall-clock deadline (the target's timeout, at most 60 s); these
    # are the backstop for ingestion, and the claim's lease is as long as the hard limit.
    soft_time_limit=SCRAPE_SOFT_TIME_LIMIT_SECONDS,
    time_limit=SCRAPE_TIME_LIMIT_SECONDS,
)
def scrape_target(target_id: int) -> dict:
    """Claim the target (skip if another worker holds it or it is no longer due), scrape it."""
    now = timezone.now()
    target = exporter_target_claim(target_id=target_id, now=now)
    if target is None:
        return {"target_id": target_id, "skipped": True}
    return exporter_scrape(target=target, now=now.timestamp())


@shared_task(
    name="monitoring.compact_rollups",
    acks_late=True,
    # Compaction is idempotent and catches up on its own: a late or repeated run only builds
    # the buckets that have closed since the last watermark.
    expires=120,
    max_retries=0,
)
def compact_rollups() -> dict[str, str | int]:
    """Build rollups for closed buckets (1 min from raw, 1 h from 1 min, 1 day from 1 h), and
    fold frames' closed minutes into their 15-minute, hour and day tiers."""
    marks = rollups_compact()
    folded = frames_rollups_close()
    return {
        **{str(resolution): moment.isoformat() for resolution, moment in marks.items()},
        "frame_minutes_folded": folded,
    }


@shared_task(
    name="monitoring.promql_sources_sync",
    acks_late=True,
    # Beat sends this every PROMQL_SYNC_SECONDS; a copy older than that is superseded by the
    # next one (each sync observes "now", so a replayed backlog would add nothing).
    expires=60,
    max_retries=0,
    # Each query has its source's deadline (at most 60 s); these are the backstop for a run
    # over many sources.
    soft_time_limit=300,
    time_limit=330,
)
def promql_sources_sync() -> dict[str, int]:
    """Sync every enabled PromQL data source: register the cards it reports and record who
    holds them (attribution intervals sampled at this cadence). A source that is down is
    recorded on the source (its last error) and skipped; the others still sync."""
    synced = failed = 0
    for source in sources():
        try:
            promql_source_sync(source=source)
        except DataSourceUnavailable:
            failed += 1
        else:
            synced += 1
    return {"synced": synced, "unavailable": failed}
