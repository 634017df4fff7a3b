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


def typical_step(times: Sequence[datetime]) -> float | None:
    """The median positive step between consecutive ``times``, in seconds (None if none)."""
    steps = sorted(
        d
        for d in ((b - a).total_seconds() for a, b in zip(times, times[1:], strict=False))
        if d > 0
    )
    return steps[len(steps) // 2] if steps else None


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
    step = typical_step(times)
    if step is None:
        return out_x, out_y
    out_x, out_y = [times[0]], [ys[0]]
    for previous, ts, value in zip(times, times[1:], list(ys)[1:], strict=False):
        if (ts - previous).total_seconds() > GAP_FACTOR * step:
            out_x.append(previous + timedelta(seconds=step))
            out_y.append(None)
        out_x.append(ts)
        out_y.append(value)
    return out_x, out_y
