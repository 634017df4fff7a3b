"""The overview's day/night curve on a cluster the workload scheduler runs: allocated vs busy
cards, training vs inference, per hour and by hour of day, from the scheduler's allocation.

*Allocated* cards in an hour are the card-seconds the scheduler's attribution intervals
(``kind=scheduler``: Slurm ``gres_detail``, Kubernetes pod allocations) cover in it, divided
by the hour's seconds — the mean number of cards held. *Busy* cards weight each held
card-second by that card's measured ``accelerator_utilization_ratio`` in the same hour (its
hourly mean over the whole hour, not only the held part: an approximation, stated on the
page); a held card with no measurement that hour counts as allocated but not measured, never
as idle. A job is *inference* when its partition (Slurm) or queue (Kueue ClusterQueue, Volcano
queue) contains one of ``SCHEDULER_INFERENCE_PARTITIONS``, *training* otherwise; a held card
whose job the portal no longer stores is *unclassified*. The hour-of-day profile averages
each clock hour (the portal's time zone) over the days of the range.

Twin clusters keep their own curve (the twin's per-step split); this module answers ``None``
for a cluster without a scheduler source.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.utils import timezone

from inventory.models import Cluster
from scheduling.models import SchedulerJob, SchedulerSource
from telemetry.models import AttributionKind
from telemetry.read import card_holdings, entity_hourly_sums, ledger_start

HOUR = 3600
CLASSES = ("training", "inference")
UTILIZATION = "accelerator_utilization_ratio"


@dataclass
class DayNight:
    """Per wall-clock hour (``hours``, aware datetimes) and per hour of day (0–23) the mean
    allocated and busy cards of each class; ``unmeasured`` is held card-hours without a
    utilization reading, ``unclassified`` held card-hours of jobs no longer stored."""

    source_kind: str  # "slurm" or "kubernetes"
    inference_words: tuple[str, ...]
    hours: list[datetime] = field(default_factory=list)
    allocated: dict[str, list[float]] = field(default_factory=dict)
    busy: dict[str, list[float]] = field(default_factory=dict)
    by_hour_allocated: dict[str, list[float | None]] = field(default_factory=dict)
    by_hour_busy: dict[str, list[float | None]] = field(default_factory=dict)
    unmeasured_card_hours: float = 0.0
    unclassified_card_hours: float = 0.0


def job_class(partition: str, words: tuple[str, ...]) -> str:
    """``inference`` when the partition or queue name contains one of ``words``."""
    name = partition.lower()
    return "inference" if any(word.lower() in name for word in words) else "training"


def _split(start: float, until: float):
    """``(hour start, seconds)`` pieces of ``[start, until)`` along whole hours."""
    hour = start // HOUR * HOUR
    while hour < until:
        yield int(hour), min(until, hour + HOUR) - max(start, hour)
        hour += HOUR


def scheduler_day_night(cluster: Cluster, start: datetime, end: datetime) -> DayNight | None:
    """The scheduler's allocation × measured utilization over ``[start, end)`` (``end``
    clipped to now), or ``None`` when the cluster has no scheduler source."""
    source = SchedulerSource.objects.filter(cluster=cluster).only("pk", "kind").first()
    if source is None:
        return None
    words = tuple(settings.SCHEDULER_INFERENCE_PARTITIONS)
    end = min(end, timezone.now())
    start = ledger_start(start, end) if start < end else start
    out = DayNight(source_kind=source.kind, inference_words=words)
    if start >= end:
        return out
    held = card_holdings(
        start=start, end=end, cluster_ids=[cluster.pk], kind=AttributionKind.SCHEDULER
    )
    partitions = dict(
        SchedulerJob.objects.filter(
            source=source, job_id__in={int(h.job) for h in held if h.job.isdigit()}
        ).values_list("job_id", "partition")
    )
    sums = entity_hourly_sums(
        cluster=cluster, metric_name=UTILIZATION, kind="accelerator", start=start, end=end
    )
    column = {int(e): i for i, e in enumerate(sums.entity_ids)}
    row = {int(h): i for i, h in enumerate(sums.hours)}
    first, last = int(start.timestamp()) // HOUR * HOUR, int(end.timestamp())
    hours = list(range(first, last, HOUR))
    allocated = {kind: defaultdict(float) for kind in CLASSES}
    busy = {kind: defaultdict(float) for kind in CLASSES}
    for holding in held:
        partition = partitions.get(int(holding.job)) if holding.job.isdigit() else None
        seconds_held = (holding.until - holding.start).total_seconds()
        if partition is None:
            out.unclassified_card_hours += seconds_held / HOUR
            continue
        kind = job_class(partition, words)
        for hour, seconds in _split(holding.start.timestamp(), holding.until.timestamp()):
            allocated[kind][hour] += seconds
            r, c = row.get(hour), column.get(holding.entity_id)
            count = sums.counts[r, c] if r is not None and c is not None else 0
            if count:
                busy[kind][hour] += seconds * float(sums.sums[r, c]) / float(count)
            else:
                out.unmeasured_card_hours += seconds / HOUR
    # Seconds of the range in each wall-clock hour (the first and last may be partial).
    span = {h: min(last, h + HOUR) - max(start.timestamp(), h) for h in hours}
    out.hours = [datetime.fromtimestamp(h, tz=UTC) for h in hours]
    for kind in CLASSES:
        out.allocated[kind] = [allocated[kind][h] / span[h] for h in hours]
        out.busy[kind] = [busy[kind][h] / span[h] for h in hours]
    _fold_by_hour_of_day(out, hours, span, allocated, busy)
    return out


def _fold_by_hour_of_day(out: DayNight, hours, span, allocated, busy) -> None:
    """Mean cards per clock hour (0–23, the portal's time zone) over the range's days; an
    hour of day the range does not reach is ``None``."""
    zone = timezone.get_current_timezone()
    clock = {h: datetime.fromtimestamp(h, tz=zone).hour for h in hours}
    seconds = [0.0] * 24
    for h in hours:
        seconds[clock[h]] += span[h]
    for kind in CLASSES:
        held, used = [0.0] * 24, [0.0] * 24
        for h in hours:
            held[clock[h]] += allocated[kind][h]
            used[clock[h]] += busy[kind][h]
        out.by_hour_allocated[kind] = [
            held[i] / seconds[i] if seconds[i] else None for i in range(24)
        ]
        out.by_hour_busy[kind] = [used[i] / seconds[i] if seconds[i] else None for i in range(24)]


def scheduler_kind(cluster: Cluster) -> str | None:
    """The cluster's scheduler source kind (``slurm``, ``kubernetes``), or ``None``."""
    return SchedulerSource.objects.filter(cluster=cluster).values_list("kind", flat=True).first()
