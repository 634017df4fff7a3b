"""Breaks in chart lines where the data has holes, for every Plotly line the portal draws.

Plotly joins consecutive points of a line whatever lies between them, so a series that stops
for two hours (a dropped scrape, a stopped twin, a rollup bucket nobody wrote) would be drawn
as a straight line through those hours, as if there had been data. :func:`break_gaps` places
a ``None`` inside every hole; with ``connectgaps: false`` Plotly breaks the line there.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TypeVar

V = TypeVar("V")

# A step longer than this many typical steps is a hole in the data, not a slow sample: a
# regular series that loses one bucket shows a 2x step, while raw samples jitter well below 1.5x.
GAP_FACTOR = 1.5
# The data's cadence is read over runs of consecutive steps, each a twentieth of the series.
# Why: data written every 40 s (or by a twin whose ticks run 10–40 s) read in 36 s buckets
# leaves a regular empty bucket, so single steps are mostly 36 s with a 72 s one every few
# points, their median 36 s, and every 72 s step was drawn as a hole — the default 6 h charts
# read as scattered dashes. A run's mean step is the data's own cadence. A short series keeps
# single steps (too few to tell a cadence from a lost bucket).
RUN_SHARE = 20


def _steps(times: Sequence[datetime]) -> list[float]:
    return [
        d
        for d in ((b - a).total_seconds() for a, b in zip(times, times[1:], strict=False))
        if d > 0
    ]


def typical_step(times: Sequence[datetime]) -> float | None:
    """The median positive step between consecutive ``times``, in seconds (None if none)."""
    steps = sorted(_steps(times))
    return steps[len(steps) // 2] if steps else None


def cadence(times: Sequence[datetime]) -> float | None:
    """The data's cadence in seconds: the median over runs of consecutive steps of each run's
    mean step, steps capped at twice the typical one so that an outage moves only the runs
    holding it (``None`` with fewer than two distinct times)."""
    typical = typical_step(times)
    if typical is None:
        return None
    steps = [min(d, 2 * typical) for d in _steps(times)]
    run = max(1, len(steps) // RUN_SHARE)
    total = sum(steps[:run])
    means = [total / run]
    for i in range(run, len(steps)):
        total += steps[i] - steps[i - run]
        means.append(total / run)
    means.sort()
    return means[len(means) // 2]


def hole_threshold(times: Sequence[datetime]) -> float | None:
    """The step from which the data has a hole: ``GAP_FACTOR`` cadences, and at least one
    cadence plus the smallest step (a bucket's width when the data is bucketed), so a bucket
    the data's cadence skips now and then is not a hole, while a regular series that loses
    one bucket still shows it."""
    every = cadence(times)
    if every is None:
        return None
    return max(GAP_FACTOR * every, every + min(_steps(times)))


def break_gaps(
    xs: Sequence[datetime | str | float], ys: Sequence[V]
) -> tuple[list[datetime | str | float], list[V | None]]:
    """``xs``/``ys`` with a ``(time, None)`` point inside every hole in the data.

    Only a time axis is checked (every x a datetime); anything else comes back unchanged.
    The break sits one typical step after the last point before the hole, where the next value
    was expected, so hover and the axis range are undisturbed.
    """
    out_x: list[datetime | str | float] = list(xs)
    out_y: list[V | None] = list(ys)
    times = [x for x in xs if isinstance(x, datetime)]
    if len(times) != len(xs) or len(times) < 3:
        return out_x, out_y
    step, threshold = typical_step(times), hole_threshold(times)
    if step is None or threshold is None:
        return out_x, out_y
    out_x, out_y = [times[0]], [ys[0]]
    for previous, ts, value in zip(times, times[1:], list(ys)[1:], strict=False):
        # A whole missed bucket is a hole (a small tolerance for float seconds).
        if (ts - previous).total_seconds() >= threshold - 1e-6:
            out_x.append(previous + timedelta(seconds=step))
            out_y.append(None)
        out_x.append(ts)
        out_y.append(value)
    return out_x, out_y
