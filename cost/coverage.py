"""How much of a cost window the telemetry actually covers.

A showback that multiplies an hourly rate by the whole window bills 24 h for a cluster that
has reported for 40 minutes. The covered time is read from the cluster's own scalar series
(the same tiers a chart reads): the spans between consecutive stored points, each gap
capped at a few typical intervals so an outage is not billed, plus one interval for the
last point. Pure arithmetic in :func:`covered_seconds`; one series read in
:func:`cluster_covered_hours`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from statistics import median

from inventory.models import Cluster
from telemetry.read import cluster_series

# The first of these the cluster reports decides its coverage: the twin and the exporters'
# cluster rollup both write them once per step.
COVERAGE_METRICS = (
    "cluster_utilization_allocated_ratio",
    "cluster_cards_allocated",
    "cluster_power_watts",
)
MAX_GAP_INTERVALS = 3  # a gap longer than 3 typical intervals is an outage, not coverage


def covered_seconds(
    stamps: Sequence[datetime],
    *,
    step_seconds: float,
    window_seconds: float,
    counts: Sequence[int] | None = None,
) -> float:
    """Seconds of the window the points cover (0 without points, at most the window).

    Points in consecutive buckets (a rollup read) cover their bucket in proportion to how
    many values it holds against a full one, so a first or last partial bucket counts only
    its share; sparser points (raw samples) cover the gaps between them.
    """
    pairs = sorted(zip((ts.timestamp() for ts in stamps), counts or [1] * len(stamps), strict=True))
    if not pairs:
        return 0.0
    times = [t for t, _ in pairs]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False) if b > a]
    typical = median(gaps) if gaps else 0.0
    if counts is not None and step_seconds > 0 and typical <= step_seconds:
        full = max(c for _, c in pairs) or 1
        covered = sum(min(c / full, 1.0) for _, c in pairs) * step_seconds
    else:
        typical = max(typical, float(step_seconds), 1.0)
        covered = sum(min(gap, MAX_GAP_INTERVALS * typical) for gap in gaps) + typical
    return min(covered, window_seconds)


def cluster_covered_hours(cluster: Cluster, start: datetime, end: datetime) -> float:
    """Hours of ``[start, end)`` covered by the cluster's telemetry."""
    window = (end - start).total_seconds()
    for name in COVERAGE_METRICS:
        series = cluster_series(cluster, name, start, end)
        if series is not None and series.points:
            seconds = covered_seconds(
                [p.ts for p in series.points],
                counts=[p.count for p in series.points],
                step_seconds=series.step_seconds,
                window_seconds=window,
            )
            return seconds / 3600.0
    return 0.0


HOUR = 3600


def covered_intervals(
    stamps: Sequence[datetime],
    *,
    step_seconds: float,
    counts: Sequence[int] | None = None,
) -> list[tuple[float, float, int]]:
    """``(from, to, values)`` spans of epoch seconds the points cover, by the rules of
    :func:`covered_seconds` (rollup buckets in proportion to how full they are, sparser
    points up to ``MAX_GAP_INTERVALS`` typical intervals after each)."""
    pairs = sorted(zip((ts.timestamp() for ts in stamps), counts or [1] * len(stamps), strict=True))
    if not pairs:
        return []
    times = [t for t, _ in pairs]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False) if b > a]
    typical = median(gaps) if gaps else 0.0
    if counts is not None and step_seconds > 0 and typical <= step_seconds:
        full = max(c for _, c in pairs) or 1
        return [(t, t + min(c / full, 1.0) * step_seconds, c) for t, c in pairs]
    typical = max(typical, float(step_seconds), 1.0)
    spans = []
    for i, (t, c) in enumerate(pairs):
        following = times[i + 1] - t if i + 1 < len(times) else typical
        spans.append((t, t + min(following, MAX_GAP_INTERVALS * typical), c))
    return spans


def covered_by_hour(
    cluster: Cluster, start: datetime, end: datetime, *, pad_seconds: float = 0.0
) -> dict[int, tuple[float, int]]:
    """``{hour start: (covered seconds, cluster values)}`` of ``[start, end)``, from the same
    series :func:`cluster_covered_hours` reads; each span is cut at the hours it crosses.

    ``pad_seconds`` reads that much on either side and cuts the spans at the window: an hour
    read on its own otherwise loses the stretch between its edge and its first point (and
    stops its last point's span at the edge), so hours closed one by one would add up to
    less than the data covers."""
    lo, hi = start.timestamp(), end.timestamp()
    pad = timedelta(seconds=pad_seconds)
    for name in COVERAGE_METRICS:
        series = cluster_series(cluster, name, start - pad, end + pad, hour_aligned=True)
        if series is None or not series.points:
            continue
        out: dict[int, list[float]] = {}
        spans = covered_intervals(
            [p.ts for p in series.points],
            counts=[p.count for p in series.points],
            step_seconds=series.step_seconds,
        )
        for a, b, values in spans:
            if a >= hi or b <= lo:
                continue  # a padding point whose span misses the window
            if a >= lo:  # a padding point lends its span, not its observations
                out.setdefault(int(a // HOUR * HOUR), [0.0, 0])[1] += values
            a, b = max(a, lo), min(b, hi)
            while a < b:
                cut = min(b, (a // HOUR + 1) * HOUR)
                out.setdefault(int(a // HOUR * HOUR), [0.0, 0])[0] += cut - a
                a = cut
        return {h: (min(s, HOUR), int(n)) for h, (s, n) in sorted(out.items())}
    return {}
