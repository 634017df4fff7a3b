"""What makes the validation report decide: each side's data coverage, the one window both
sides are compared over, a verdict per SLO and target, and the money with its inputs.

* **Coverage, stated once**: both sides are compared over the span where *both* have data
  within the asked window — from the later first value to the earlier last one (each side's
  data read from the same series the cost ledger reads, :mod:`cost.coverage`), its bounds on
  whole minutes so two readings in the same minute give the same figures. Its stated length
  is the time *both* sides' data cover inside it (:func:`overlap_seconds`), so it never
  exceeds what the data covers, gaps included. A "24 h" report whose unified side reported
  for 14 minutes compares those 14 minutes on both sides, says so once, and computes every
  figure over them.
* **Retention**: a window that starts before the retained serving counters (or the minute
  detail the cost ledger needs) begin is refused (:class:`ReportRefused`), naming what is
  kept from when and the window that can be answered instead; nothing is computed on the
  part that is left, so no verdict flips as data ages out of a window.
* **Verdicts** (:mod:`.report_services`): each inference service with an operator target
  gets one verdict per target and side (TTFT P99, TPOT P99, end-to-end P99): met when the
  P99 of the compared window's requests (merged histograms) is at or under the target, not
  met above it, no verdict over no requests or on an approximation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.utils.formats import date_format
from django.utils.translation import gettext as _

from cluster_portal.web.timerange import PRESETS
from cluster_portal.web.units import duration
from cost.coverage import COVERAGE_METRICS, covered_intervals
from inventory.models import Cluster
from telemetry.read import cluster_series, serving_counters_kept_for

MINUTE = 60


class ReportRefused(ValueError):
    """A window the retained data cannot cover (the message names what is kept from when)."""


def default_range(preferred: str = "24h") -> str:
    """The report's default window: ``preferred``, or the longest preset the kept serving
    counters cover (the demo keeps 6 h, so its default report is not a refusal)."""
    keep = serving_counters_kept_for()
    if PRESETS[preferred] <= keep:
        return preferred
    fits = [name for name, span in PRESETS.items() if span <= keep]
    return max(fits, key=PRESETS.__getitem__) if fits else min(PRESETS, key=PRESETS.__getitem__)


def retention_refusal(start: datetime, *, now: datetime) -> str | None:
    """Why the report cannot answer a window starting at ``start``, or ``None``.

    The report's percentiles are read from raw serving counters (never rolled up into
    mergeable buckets), so a window reaching back past their retention would be judged on
    the part that is left, and its verdicts would move as that part shrinks. A minute of
    slack absorbs the instant between parsing a preset window and reading it."""
    keep = serving_counters_kept_for()
    kept_from = now - keep
    if start >= kept_from - timedelta(seconds=MINUTE):
        return None
    return _(
        "Serving counters are kept for %(keep)s (TELEMETRY_RAW_OTHER_HOURS), from %(kept)s on, "
        "so the request percentiles of a window starting at %(start)s cannot be read whole and "
        "nothing is computed on the part that is left. Choose a window of at most %(keep)s, "
        "starting at %(kept)s or later."
    ) % {
        "keep": duration(keep.total_seconds()),
        "kept": date_format(kept_from, "Y-m-d H:i"),
        "start": date_format(start, "Y-m-d H:i"),
    }


@dataclass(frozen=True)
class Coverage:
    """How much of the asked window one cluster's telemetry covers, and from when to when."""

    cluster: Cluster
    covered_seconds: float
    window_seconds: float
    first: datetime | None
    last: datetime | None
    spans: tuple[tuple[float, float], ...] = ()  # covered (from, to) epoch seconds


def _spans(cluster: Cluster, name: str, start: datetime, end: datetime) -> tuple[list, int]:
    """Covered ``(from, to)`` spans of one scalar in the window, and the series' step."""
    series = cluster_series(cluster, name, start, end)
    if series is None or not series.points:
        return [], 0
    lo, hi = start.timestamp(), end.timestamp()
    spans = [
        (max(a, lo), min(b, hi))
        for a, b, _ in covered_intervals(
            [p.ts for p in series.points],
            counts=[p.count for p in series.points],
            step_seconds=series.step_seconds,
        )
        if min(b, hi) > max(a, lo)
    ]
    return spans, series.step_seconds


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def coverage(cluster: Cluster, start: datetime, end: datetime) -> Coverage:
    """The cluster's coverage of the window; first and last data to the value (a long window
    reads coarse rollups, so the two ends are read again at their finest tier)."""
    window = (end - start).total_seconds()
    for name in COVERAGE_METRICS:
        spans, step = _spans(cluster, name, start, end)
        if not spans:
            continue
        first, last = spans[0][0], spans[-1][1]
        if step > MINUTE:
            head, _ = _spans(cluster, name, _at(first), _at(min(first + step, end.timestamp())))
            tail, _ = _spans(cluster, name, _at(max(last - step, first)), end)
            first = head[0][0] if head else first
            last = tail[-1][1] if tail else last
        return Coverage(
            cluster=cluster,
            covered_seconds=min(sum(b - a for a, b in spans), window),
            window_seconds=window,
            first=_at(first),
            last=_at(last),
            spans=tuple((a, b) for a, b in spans),
        )
    return Coverage(cluster, 0.0, window, None, None)


def common_window(
    *sides: Coverage, start: datetime, end: datetime
) -> tuple[datetime, datetime] | None:
    """The span where every side has data, widened to whole minutes (the stored tiers'
    buckets, so a reading in the same minute reads the same values); ``None`` when the sides
    do not overlap. How much of it is covered is :func:`overlap_seconds`."""
    if any(side.first is None or side.last is None for side in sides):
        return None
    lo = max(side.first.timestamp() for side in sides)
    hi = min(side.last.timestamp() for side in sides)
    if hi <= lo:
        return None
    lo = max(lo // MINUTE * MINUTE, start.timestamp() // MINUTE * MINUTE)
    hi = min(-(-hi // MINUTE) * MINUTE, -(-end.timestamp() // MINUTE) * MINUTE)
    return datetime.fromtimestamp(lo, tz=UTC), datetime.fromtimestamp(hi, tz=UTC)


def overlap_seconds(*sides: Coverage, lo: datetime, hi: datetime) -> float:
    """Seconds of ``[lo, hi]`` every side's data covers (the intersection of their spans)."""
    common = [(lo.timestamp(), hi.timestamp())]
    for side in sides:
        common = [
            (max(a, c), min(b, d))
            for a, b in common
            for c, d in side.spans
            if min(b, d) > max(a, c)
        ]
    return sum(b - a for a, b in common)
