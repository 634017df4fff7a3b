"""Attribution from exporter labels: keep who held each card as intervals (the write side).

Every ingested exporter sample of a card names its holder in labels (Kubernetes ``pod`` /
``namespace`` / ``container``, or dcgm-exporter's ``hpc_job``). Per batch the observations are
collapsed to one per card and timestamp, then each card's current interval is extended, ended
(the card seen free or held by someone else) or a new one begins. The work is per card, not
per sample row: one plain read per batch, and a lock (skipping rows another shard holds) plus
a write only for the cards whose interval changes — most batches of a scrape change none.

Retries are harmless: an observation inside an interval's span changes nothing and is not
counted twice. Two workers writing the same card at once (Prometheus shards series, not cards)
may each start an interval at the same time — the unique start keeps one — or overlapping
ones, which the read side (``telemetry.read.local.attribution``) merges before billing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import connection

from telemetry.models import AttributionInterval

HOLDER_FIELDS = ("namespace", "pod", "container", "hpc_job", "host")
MAX_HOLDER_CHARS = 200


@dataclass(frozen=True)
class Holder:
    """Who held a card at one observation; all empty (``free``) means nobody did."""

    namespace: str = ""
    pod: str = ""
    container: str = ""
    hpc_job: str = ""
    host: str = ""

    @property
    def free(self) -> bool:
        return not (self.pod or self.hpc_job)

    @classmethod
    def from_labels(cls, labels: dict[str, str], *, host: str | None) -> Holder:
        def cut(name: str) -> str:
            return (labels.get(name) or "")[:MAX_HOLDER_CHARS]

        return cls(
            namespace=cut("namespace"),
            pod=cut("pod"),
            container=cut("container"),
            hpc_job=cut("hpc_job"),
            host=(host or "")[:MAX_HOLDER_CHARS],
        )


@dataclass(frozen=True)
class Observation:
    """One card (telemetry entity id) seen at ``timestamp`` (unix seconds) with ``holder``."""

    entity_id: int
    timestamp: float
    holder: Holder


def _holder_of(row: AttributionInterval) -> Holder:
    return Holder(**{name: getattr(row, name) for name in HOLDER_FIELDS})


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def attribution_record(
    *, cluster_id: int, observations: Iterable[Observation], source: int | None = None
) -> dict[str, int]:
    """Extend, end or begin the cards' attribution intervals; call inside the batch's
    transaction. Returns counts of intervals ``started``, ``extended`` and ``ended``."""
    seen: dict[int, dict[float, Holder]] = {}
    for item in observations:
        # Several metrics of one card at one scrape name the same holder: one observation.
        seen.setdefault(item.entity_id, {})[item.timestamp] = item.holder
    counts = {"started": 0, "extended": 0, "ended": 0}
    if not seen:
        return counts
    if all(h.free for times in seen.values() for h in times.values()):
        # Nobody holds these cards: only intervals still open need ending.
        candidates = AttributionInterval.objects.filter(
            entity_id__in=list(seen), ended_at__isnull=True
        )
    else:
        candidates = AttributionInterval.objects.filter(entity_id__in=list(seen))
    earliest = min(min(times) for times in seen.values())
    horizon = _at(earliest - settings.ATTRIBUTION_MAX_GAP_SECONDS)
    candidates = candidates.filter(last_seen_at__gte=horizon).order_by("entity_id", "started_at")
    # First a plain read: Prometheus sends a scrape's series of one card through several
    # shards at once, and after the first of them every other finds its observations inside
    # the interval already — no lock, no write.
    current = {row.entity_id: row for row in candidates}  # the latest-starting one wins
    busy = {
        entity_id
        for entity_id, times in seen.items()
        if any(_step(current.get(entity_id), entity_id, ts, h, cluster_id, source).events
               for ts, h in times.items())
    }  # fmt: skip
    if not busy:
        return counts
    # Then lock only the rows to change. A row another shard holds is that shard's update of
    # the same card from the same scrape: skip it rather than queue behind it (its next
    # scrape extends it again), and never write from a stale read.
    held = set(current) & busy
    locked = {
        row.entity_id: row
        for row in candidates.filter(entity_id__in=held).select_for_update(skip_locked=True)
    }
    changed: dict[int, AttributionInterval] = {}
    created: list[AttributionInterval] = []
    for entity_id in sorted(busy):
        if entity_id in held and entity_id not in locked:
            continue
        row = locked.get(entity_id)
        for ts in sorted(seen[entity_id]):
            step = _step(row, entity_id, ts, seen[entity_id][ts], cluster_id, source)
            for action, touched in step.events:
                counts[action] += 1
                if action == "started":
                    created.append(touched)
                elif touched.pk is not None:
                    changed[touched.pk] = touched
            row = step.current
    if changed:
        _intervals_update(list(changed.values()))
    if created:
        AttributionInterval.objects.bulk_create(created, ignore_conflicts=True)
    return counts


def _intervals_update(rows: list[AttributionInterval]) -> None:
    """Write the changed intervals in one statement. ``bulk_update`` builds a CASE per field
    and row (5 × ~250 per remote-write batch): resolving those expressions was 70 % of the
    receiver's CPU once every scrape extended every held card's interval (BENCHMARKS.md)."""
    if connection.vendor != "postgresql":  # SQLite (the demo): no arrays; a few rows anyway
        AttributionInterval.objects.bulk_update(
            rows, ["started_at", "last_seen_at", "ended_at", "step_seconds", "observations"]
        )
        return
    table = AttributionInterval._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS a SET started_at = v.started_at, last_seen_at = v.last_seen_at,"
            " ended_at = v.ended_at, step_seconds = v.step_seconds,"
            " observations = v.observations"
            " FROM unnest(%s::bigint[], %s::timestamptz[], %s::timestamptz[],"
            " %s::timestamptz[], %s::double precision[], %s::integer[])"
            " AS v(id, started_at, last_seen_at, ended_at, step_seconds, observations)"
            " WHERE a.id = v.id",
            [
                [row.pk for row in rows],
                [row.started_at for row in rows],
                [row.last_seen_at for row in rows],
                [row.ended_at for row in rows],
                [float(row.step_seconds) for row in rows],
                [row.observations for row in rows],
            ],
        )


@dataclass
class _Step:
    """A card's current interval after one observation, and what changed on the way."""

    current: AttributionInterval | None
    events: list[tuple[str, AttributionInterval]]


def _step(
    row: AttributionInterval | None,
    entity_id: int,
    ts: float,
    holder: Holder,
    cluster_id: int,
    source: int | None,
) -> _Step:
    max_gap = settings.ATTRIBUTION_MAX_GAP_SECONDS
    if row is not None:
        start, last = row.started_at.timestamp(), row.last_seen_at.timestamp()
        open_ = row.ended_at is None
        same = open_ and _holder_of(row) == holder
        if start <= ts <= last:
            return _Step(row, [])  # a retry, or a value inside the known span
        if same and last < ts <= last + max_gap:
            _widen(row, gap=ts - last)
            row.last_seen_at = _at(ts)
            return _Step(row, [("extended", row)])
        if same and start - max_gap <= ts < start:
            _widen(row, gap=start - ts)
            row.started_at = _at(ts)
            return _Step(row, [("extended", row)])
        if ts < start:
            return _Step(row, [])  # late data from before the current holder: history kept
        if open_:
            # Free now, someone else, or back after too long a gap: this holder's time ended.
            row.ended_at = _at(min(ts, last + max_gap))
            if holder.free:
                return _Step(None, [("ended", row)])
            new = _new(entity_id, ts, holder, cluster_id, source)
            return _Step(new, [("ended", row), ("started", new)])
    if holder.free:
        return _Step(row, [])
    new = _new(entity_id, ts, holder, cluster_id, source)
    return _Step(new, [("started", new)])


def _widen(row: AttributionInterval, *, gap: float) -> None:
    # The smallest gap between observations is the scrape step the interval's end adds.
    row.step_seconds = gap if row.step_seconds <= 0 else min(row.step_seconds, gap)
    row.observations += 1


def _new(
    entity_id: int, ts: float, holder: Holder, cluster_id: int, source: int | None
) -> AttributionInterval:
    return AttributionInterval(
        cluster_id=cluster_id,
        entity_id=entity_id,
        started_at=_at(ts),
        last_seen_at=_at(ts),
        source_id=source,
        **{name: getattr(holder, name) for name in HOLDER_FIELDS},
    )
