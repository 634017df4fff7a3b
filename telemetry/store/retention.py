"""Retention: raw samples are short-lived (per-accelerator data most of all); rollups last."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from telemetry.models import EntityKind, Frame, Rollup, Sample
from telemetry.store.samples import watermarks

# Minute detail (rollups and frames) is never kept under two hours: the cost ledger closes
# each hour from its minutes a couple of minutes after it ends and bills the open hour from
# them (cost.hours), so an hour's first minutes must outlive the hour by more than that.
MINUTE_DETAIL_FLOOR = timedelta(hours=2)


@dataclass(frozen=True)
class RetentionPolicy:
    """How long each kind of telemetry is kept.

    ``frame_rollup`` defaults to ``rollup``; it is separate because a frame holds a whole
    cluster (a 10,240-card per-minute rollup frame is ~200 KB), so per-card minute detail is
    worth keeping for days, not weeks.
    """

    raw_accelerator: timedelta
    raw_other: timedelta
    rollup: dict[int, timedelta]
    frame_rollup: dict[int, timedelta] | None = None

    @classmethod
    def from_settings(cls) -> RetentionPolicy:
        cfg = settings.TELEMETRY_RETENTION
        return cls(
            raw_accelerator=timedelta(hours=cfg["raw_accelerator_hours"]),
            raw_other=timedelta(hours=cfg["raw_other_hours"]),
            rollup={
                60: max(timedelta(days=cfg["rollup_minute_days"]), MINUTE_DETAIL_FLOOR),
                900: timedelta(days=cfg["rollup_15min_days"]),
                3600: timedelta(days=cfg["rollup_hour_days"]),
                86400: timedelta(days=cfg["rollup_day_days"]),
            },
            frame_rollup={
                60: max(timedelta(hours=cfg["frame_minute_hours"]), MINUTE_DETAIL_FLOOR),
                900: timedelta(hours=cfg["frame_15min_hours"]),
                3600: timedelta(days=cfg["rollup_hour_days"]),
                86400: timedelta(days=cfg["rollup_day_days"]),
            },
        )

    def minute_detail_kept_from(self, now: datetime) -> datetime:
        """The oldest time whose minute detail (raw samples, minute rollups and minute frames)
        is still whole: what a per-hour figure built from minutes (the cost ledger) can be
        read from. Raw *samples* are kept at least ``MINUTE_DETAIL_FLOOR`` for it (raw
        frames follow ``raw_accelerator`` alone: the ledger reads minute frames)."""
        keep = min(
            self.rollup[60],
            (self.frame_rollup or self.rollup)[60],
            max(self.raw_accelerator, MINUTE_DETAIL_FLOOR),
            max(self.raw_other, MINUTE_DETAIL_FLOOR),
        )
        return now - keep

    @property
    def serving_counters_kept_for(self) -> timedelta:
        """How long raw serving counters (latency histograms, request and token counters of
        non-accelerator entities) are kept: what a percentile of a window's requests needs
        (they are never rolled up into mergeable buckets)."""
        return max(self.raw_other, MINUTE_DETAIL_FLOOR)


def telemetry_prune(*, policy: RetentionPolicy, now: datetime | None = None) -> dict[str, int]:
    """Delete data older than the policy allows; returns rows deleted per class."""
    now = now or timezone.now()
    deleted: dict[str, int] = {}
    marks = watermarks()
    never = datetime(1970, 1, 1, tzinfo=UTC)

    def not_after_compaction(cutoff: datetime, resolution: int) -> datetime:
        # Data is only deleted once the next coarser rollup has been built from it: a stopped
        # compaction must not turn retention into data loss.
        return min(cutoff, marks.get(resolution, never))

    with transaction.atomic():
        deleted["raw_accelerator"] = Sample.objects.filter(
            entity__kind=EntityKind.ACCELERATOR,
            ts__lt=not_after_compaction(now - max(policy.raw_accelerator, MINUTE_DETAIL_FLOOR), 60),
        ).delete()[0]
        deleted["raw_other"] = (
            Sample.objects.exclude(entity__kind=EntityKind.ACCELERATOR)
            .filter(
                ts__lt=not_after_compaction(now - max(policy.raw_other, MINUTE_DETAIL_FLOOR), 60)
            )
            .delete()[0]
        )
        coarser = {60: 900, 900: 3600, 3600: 86400}
        for resolution, keep in policy.rollup.items():
            cutoff = now - keep
            if resolution in coarser:
                cutoff = not_after_compaction(cutoff, coarser[resolution])
            deleted[f"rollup_{resolution}"] = Rollup.objects.filter(
                resolution=resolution, bucket__lt=cutoff
            ).delete()[0]
        # Frames hold dense per-entity data (cards, links, nodes): raw frames follow the
        # per-accelerator raw policy, rollup frames the rollup policy.
        deleted["frames_raw"] = Frame.objects.filter(
            resolution=0, ts__lt=now - policy.raw_accelerator
        ).delete()[0]
        for resolution, keep in (policy.frame_rollup or policy.rollup).items():
            deleted[f"frames_{resolution}"] = Frame.objects.filter(
                resolution=resolution, ts__lt=now - keep
            ).delete()[0]
    if connection.vendor == "sqlite":
        _sqlite_checkpoint()
    return deleted


def _sqlite_checkpoint() -> None:
    """Copy the WAL back into the database file now that the prune committed (PASSIVE: it
    waits for no reader and blocks no writer). The deleted rows' pages go to SQLite's free
    list and the next ticks' rows reuse them, so the file stays at its retention-bound size;
    the WAL restarts and ``journal_size_limit`` (settings) cuts it back. Nothing committed
    depends on this: a killed worker leaves the WAL for the next connection to checkpoint."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
