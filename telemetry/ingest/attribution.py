"""Attribution from exporter labels: keep who held each card as intervals (the write side).

Every ingested exporter sample of a card names its holder in labels (Kubernetes ``pod`` /
``namespace`` / ``container``, or dcgm-exporter's ``hpc_job``). Per batch the observations are
collapsed to one per card and timestamp, then each card's current interval is extended, ended
(the card seen free or held by someone else) or a new one begins. The work is per card, not
per sample row: one plain read per batch, and a lock (skipping rows another shard holds) plus
a write only for the cards whose interval changes — most batches of a scrape change none.

Each process remembers what it last wrote per card (:class:`Recent`, in the ingestion memo
``telemetry.catalogue.known``): an observation of the same holder within
``ATTRIBUTION_WRITE_SECONDS`` of the interval's written end touches no row — a remote-write
receiver sees every card's ~20 series in several requests per scrape, and the plain read of
~500 intervals per request was 40 % of its time (BENCHMARKS.md). A change of holder, a card
seen free, a gap or an observation before the interval always goes to the database at once,
so only an interval's *open end* lags: by less than ``ATTRIBUTION_WRITE_SECONDS`` (a card that
vanishes is billed up to that much short). The skipped observations still count
(``observations``) and their spacing still sets ``step_seconds`` when the end is written.

Retries are harmless: an observation inside an interval's span changes nothing and is not
counted twice. Two workers writing the same card at once (Prometheus shards series, not cards)
may each start an interval at the same time — the unique start keeps one — or overlapping
ones, which the read side (``telemetry.read.local.attribution``) merges before billing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import NamedTuple

from django.conf import settings
from django.db import connection, transaction

from telemetry.catalogue.known import KNOWN
from telemetry.models import AttributionInterval, AttributionKind

# Labels only ever touch their own kind: the scheduler's intervals of the same card are the
# scheduler sync's (telemetry.ingest.scheduler_attribution), never extended or ended here.
EXPORTER_INTERVALS = AttributionInterval.objects.filter(kind=AttributionKind.EXPORTER)
HOLDER_FIELDS = ("namespace", "pod", "container", "hpc_job", "host")
MAX_HOLDER_CHARS = 200


class Holder(NamedTuple):
    """Who held a card at one observation; all empty (``free``) means nobody did.

    A named tuple, not a dataclass: one is built per card per remote-write request."""

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
        host = (host or "")[:MAX_HOLDER_CHARS]
        if not labels:
            return cls(host=host)
        get = labels.get
        return cls(
            (get("namespace") or "")[:MAX_HOLDER_CHARS],
            (get("pod") or "")[:MAX_HOLDER_CHARS],
            (get("container") or "")[:MAX_HOLDER_CHARS],
            (get("hpc_job") or "")[:MAX_HOLDER_CHARS],
            host,
        )


class Observation(NamedTuple):
    """One card (telemetry entity id) seen at ``timestamp`` (unix seconds) with ``holder``."""

    entity_id: int
    timestamp: float
    holder: Holder


def _holder_of(row: AttributionInterval) -> Holder:
    return Holder(**{name: getattr(row, name) for name in HOLDER_FIELDS})


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


@dataclass(frozen=True)
class Recent:
    """What this process knows of a card's current interval: its ``holder`` (free: none open),
    ``start``, the end the database has (``written``), the latest observation here (``seen``),
    the smallest gap between observations here (``gap``, 0 = none yet) and how many
    observations since ``written`` were not written (``pending``)."""

    holder: Holder
    start: float
    written: float
    seen: float
    gap: float = 0.0
    pending: int = 0


def _period(entity_id: int, every: float) -> float:
    """A card's write period: ``every`` spread over [¾, 1) of it by the card's id (golden
    ratio), so the cards registered in one scrape do not all fall due in the same one."""
    return every * (0.75 + 0.25 * ((entity_id * 0.6180339887498949) % 1.0))


_MEMO = "attribution"  # the ingestion memo's namespace: (cluster, card) -> Recent


def _keys(cluster_id: int, entity_ids: Iterable[int]) -> list[tuple[int, int]]:
    return [(cluster_id, entity_id) for entity_id in entity_ids]


def _covered(recent: Recent, times: dict[float, Holder], every: float) -> Recent | None:
    """``recent`` advanced by ``times`` when this process may skip the database for them
    (same holder, after the start, not due, no gap); else ``None``. ``every``: the card's
    write period (:func:`_period`)."""
    max_gap = settings.ATTRIBUTION_MAX_GAP_SECONDS
    for ts in sorted(times):
        if times[ts] != recent.holder:
            return None
        if recent.holder.free:
            continue  # free and still free: nothing to write
        if ts < recent.start:
            return None
        if ts <= recent.seen:
            continue
        if ts - recent.written >= every or ts - recent.seen > max_gap:
            return None
        gap = ts - recent.seen
        recent = replace(
            recent,
            seen=ts,
            gap=gap if recent.gap <= 0 else min(recent.gap, gap),
            pending=recent.pending + 1,
        )
    return recent


def _recent_of(row: AttributionInterval | None) -> Recent | None:
    if row is None or row.ended_at is not None:
        return None
    last = row.last_seen_at.timestamp()
    return Recent(_holder_of(row), row.started_at.timestamp(), last, last, row.step_seconds)


def attribution_record(
    *, cluster_id: int, observations: Iterable[Observation], source: int | None = None
) -> dict[str, int]:
    """Extend, end or begin the cards' attribution intervals; call inside the batch's
    transaction. Returns counts of intervals ``started``, ``extended`` and ``ended``
    (written to the database; an end this process holds back is not counted yet)."""
    seen: dict[int, dict[float, Holder]] = {}
    for item in observations:
        # Several metrics of one card at one scrape name the same holder: one observation.
        seen.setdefault(item.entity_id, {})[item.timestamp] = item.holder
    counts = {"started": 0, "extended": 0, "ended": 0}
    if not seen:
        return counts
    every = float(settings.ATTRIBUTION_WRITE_SECONDS)
    remembered = (
        {key[1]: recent for key, recent in KNOWN.get_many(_MEMO, _keys(cluster_id, seen)).items()}
        if every > 0
        else {}
    )
    learned: dict[int, Recent | None] = {}
    for entity_id, recent in remembered.items():
        advanced = _covered(recent, seen[entity_id], _period(entity_id, every))
        if advanced is not None:
            learned[entity_id] = advanced
            del seen[entity_id]
    if seen:
        learned.update(_record(cluster_id, seen, source, counts, remembered))
    if every > 0 and learned:
        # Only what committed may be remembered: a rolled-back write never happened.
        # (``None`` forgets a card: KNOWN answers only entries that hold a value.)
        memo = {(cluster_id, entity_id): recent for entity_id, recent in learned.items()}
        transaction.on_commit(lambda: KNOWN.put_many(_MEMO, memo))
    return counts


def _record(
    cluster_id: int,
    seen: dict[int, dict[float, Holder]],
    source: int | None,
    counts: dict[str, int],
    remembered: dict[int, Recent],
) -> dict[int, Recent | None]:
    """The database path of :func:`attribution_record`; returns what to remember per card."""
    if all(h.free for times in seen.values() for h in times.values()):
        # Nobody holds these cards: only intervals still open need ending.
        candidates = EXPORTER_INTERVALS.filter(entity_id__in=list(seen), ended_at__isnull=True)
    else:
        candidates = EXPORTER_INTERVALS.filter(entity_id__in=list(seen))
    earliest = min(min(times) for times in seen.values())
    horizon = _at(earliest - settings.ATTRIBUTION_MAX_GAP_SECONDS)
    candidates = candidates.filter(last_seen_at__gte=horizon).order_by("entity_id", "started_at")
    # First a plain read: Prometheus sends a scrape's series of one card through several
    # shards at once, and after the first of them every other finds its observations inside
    # the interval already — no lock, no write.
    current = {row.entity_id: row for row in candidates}  # the latest-starting one wins
    hints = {
        entity_id: (recent.gap, recent.pending)
        for entity_id, recent in remembered.items()
        if entity_id in seen and recent.pending
    }
    busy = {
        entity_id
        for entity_id, times in seen.items()
        if any(_step(current.get(entity_id), entity_id, ts, h, cluster_id, source).events
               for ts, h in times.items())
    }  # fmt: skip
    learned: dict[int, Recent | None] = {}
    for entity_id, times in seen.items():
        if entity_id not in busy:
            learned[entity_id] = _recent_of(current.get(entity_id)) or _free(times)
    if not busy:
        return learned
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
            learned[entity_id] = None  # another shard is writing it: ask the database next time
            continue
        row = locked.get(entity_id)
        hint = hints.get(entity_id)
        for ts in sorted(seen[entity_id]):
            step = _step(row, entity_id, ts, seen[entity_id][ts], cluster_id, source, hint)
            for action, touched in step.events:
                counts[action] += 1
                if action == "started":
                    created.append(touched)
                elif touched.pk is not None:
                    changed[touched.pk] = touched
                if action == "extended":
                    hint = None  # the held-back observations are in this row now
            row = step.current
        learned[entity_id] = _recent_of(row) or _free(seen[entity_id])
    if changed:
        _intervals_update(list(changed.values()))
    if created:
        AttributionInterval.objects.bulk_create(created, ignore_conflicts=True)
        # A start another worker wrote first was ignored: learn it from the database next time.
        for row in created:
            if row.pk is None:
                learned[row.entity_id] = None
    return learned


def _free(times: dict[float, Holder]) -> Recent | None:
    """A card last seen free: remembered as free (nothing to write while it stays so)."""
    last = max(times)
    if not times[last].free:
        return None
    return Recent(times[last], -math.inf, last, last)


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
    hint: tuple[float, int] | None = None,
) -> _Step:
    """``hint``: ``(smallest gap, count)`` of observations this process held back since the
    row's written end (:class:`Recent`), folded in when the end is extended."""
    max_gap = settings.ATTRIBUTION_MAX_GAP_SECONDS
    if row is not None:
        start, last = row.started_at.timestamp(), row.last_seen_at.timestamp()
        open_ = row.ended_at is None
        same = open_ and _holder_of(row) == holder
        if start <= ts <= last:
            return _Step(row, [])  # a retry, or a value inside the known span
        if same and last < ts <= last + max_gap:
            if hint is not None and 0 < hint[0] < ts - last:
                _widen(row, gap=hint[0], skipped=hint[1])
            else:
                _widen(row, gap=ts - last, skipped=hint[1] if hint else 0)
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


def _widen(row: AttributionInterval, *, gap: float, skipped: int = 0) -> None:
    # The smallest gap between observations is the scrape step the interval's end adds.
    row.step_seconds = gap if row.step_seconds <= 0 else min(row.step_seconds, gap)
    row.observations += 1 + skipped


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
