"""Intervals in which a twin cluster got no data because no tick could run (an outage).

The twin records such a gap, once ticks resume, as a ``twin_tick_gap_seconds`` sample stamped
where data resumes (value: the gap's length). Monitoring reads it like any other telemetry, so
the status page can show outages without knowing about the simulation app.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from telemetry.models import Sample

GAP_METRIC = "twin_tick_gap_seconds"


@dataclass(frozen=True)
class DataGap:
    cluster: str
    started_at: datetime
    ended_at: datetime
    seconds: float


def recent_data_gaps(*, hours: int = 24, limit: int = 20) -> list[DataGap]:
    """The newest gaps of the last ``hours``, newest first."""
    since = timezone.now() - timedelta(hours=hours)
    rows = (
        Sample.objects.filter(metric__name=GAP_METRIC, ts__gte=since)
        .order_by("-ts")
        .values_list("entity__cluster__name", "ts", "value")[:limit]
    )
    return [
        DataGap(cluster, ts - timedelta(seconds=value), ts, value) for cluster, ts, value in rows
    ]
