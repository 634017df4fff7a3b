"""The before-you-sign figure of a day/night calendar: the cluster's own synced job history of
the last days replayed through the twin under the calendar in force and under a proposed
revision (``simulation.engine.calendar_replay``), each figure's difference with its seed
interval. A read (nothing is written); the engine's approximations are stated there and on
the page."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from django.utils import timezone

from inventory.models import Cluster
from scheduling.calendar.windows import DayWindow
from scheduling.models import SchedulerJob, SchedulerNode, SchedulerPartition
from scheduling.models_calendar import CalendarRevision, WindowCalendar
from simulation.engine.calendar_replay import calendar_replay

_GRES_COUNT = re.compile(r"^(gpu|npu)(?::[^:(]+)?:(\d+)")


def _cards(gres: str) -> int:
    total = 0
    for item in gres.split(","):
        match = _GRES_COUNT.match(item.strip())
        total += int(match.group(2)) if match else 0
    return total


def _night(revision: CalendarRevision | None) -> tuple[float, float] | None:
    if revision is None:
        return None
    hour = lambda t: t.hour + t.minute / 60.0  # noqa: E731
    return hour(revision.day_end), hour(revision.day_start)


def history_demand(*, cluster: Cluster, start: datetime, now: datetime) -> tuple[list, int]:
    """Demand rows of the jobs that ran since ``start`` (seconds from ``start``), and how
    many jobs were left out because they never started."""
    jobs = SchedulerJob.objects.filter(source__cluster=cluster, submit_time__gte=start)
    rows, never = [], 0
    for job in jobs.only("gpus", "npus", "submit_time", "start_time", "end_time"):
        cards = job.gpus + job.npus
        if job.start_time is None or cards == 0:
            never += job.start_time is None
            continue
        ran = ((job.end_time or now) - job.start_time).total_seconds()
        rows.append(
            {"cards": cards, "submit": (job.submit_time - start).total_seconds(), "duration": ran}
        )
    return rows, never


def calendar_whatif(
    *,
    cluster: Cluster,
    revision: CalendarRevision,
    days: int = 3,
    seeds: tuple[int, ...] = (7, 8, 9),
    now: datetime | None = None,
) -> dict:
    """The replay's figures plus what it was built from (cards, inference share, jobs)."""
    now = now or timezone.now()
    start = now - timedelta(days=days)
    nodes = {n.name: _cards(n.gres) for n in SchedulerNode.objects.filter(source__cluster=cluster)}
    cards = sum(nodes.values())
    inference = list(revision.inference_nodes)
    if not inference and revision.inference_partition:
        partition = SchedulerPartition.objects.filter(
            source__cluster=cluster, name=revision.inference_partition
        ).first()
        inference = list(partition.nodes) if partition else []
    inference_cards = sum(nodes.get(n, 0) for n in inference)
    if cards == 0:
        raise ValueError("the scheduler reported no cards for this cluster: sync it first")
    share = inference_cards / cards
    if not 0 < share < 1:
        raise ValueError(
            f"the inference nodes hold {inference_cards} of {cards} cards: the what-if "
            "needs both an inference and a training share"
        )
    demand, never = history_demand(cluster=cluster, start=start, now=now)
    calendar = WindowCalendar.objects.filter(cluster=cluster).select_related("applied").first()
    current = calendar.applied if calendar else None
    local = start.astimezone(
        DayWindow(revision.day_start, revision.day_end, revision.timezone).zone
    )
    result = calendar_replay(
        cards=cards,
        demand=demand,
        inference_fraction=share,
        hours=days * 24.0,
        start_hour=local.hour + local.minute / 60.0,
        current_night=_night(current),
        proposed_night=_night(revision),
        seeds=seeds,
    )
    result.update(
        cards=cards,
        inference_cards=inference_cards,
        days=days,
        never_started=never,
        current_revision=current.number if current else None,
        proposed_revision=revision.number,
    )
    return result
