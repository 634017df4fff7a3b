"""Pure chart builders: plain data in, a Plotly figure (a JSON-serialisable dict) out.

No database, no request, no Django: every function here is unit-tested on literals. The
browser renders the dicts with ``Plotly.react``; the mode bar stays on so every chart can be
downloaded as a PNG.

Colours are the Okabe–Ito palette, distinguishable with the common colour-vision
deficiencies; heatmaps use Cividis, which is perceptually uniform and colour-blind safe.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

from cluster_portal.web.chartgaps import break_gaps
from cluster_portal.web.charttext import chart_text, chart_texts

OKABE_ITO = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)
HEATMAP_COLORSCALE = "Cividis"

Figure = dict[str, Any]
Point = tuple[datetime | str, float | None]


def colour(index: int) -> str:
    """The ``index``-th palette colour (cycling)."""
    return OKABE_ITO[index % len(OKABE_ITO)]


def _clean(value: float | None) -> float | None:
    # JSON has no NaN/inf: Plotly draws None as a gap, which is what a missing value is.
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return value


@lru_cache(maxsize=16384)
def iso_time(ts: datetime) -> str:
    """``ts.isoformat()``, remembered: a page's curves share one time axis (an overview's
    eleven curves, its tables and every reader's range re-use the same few hundred stamps),
    and formatting each point anew was a tenth of a page's time."""
    return ts.isoformat()


def _x(ts: datetime | str) -> str:
    return iso_time(ts) if isinstance(ts, datetime) else ts


def _xy(points: Sequence[Point]) -> tuple[list[str], list[float | None]]:
    """A trace's ``x``/``y``: ISO times, clean values, and a break inside every hole in the
    data (:func:`cluster_portal.web.chartgaps.break_gaps`; traces set ``connectgaps: false``)."""
    xs, ys = break_gaps([ts for ts, _ in points], [_clean(v) for _, v in points])
    return [_x(x) for x in xs], ys


# Plotly axis formats per unit: d3's "~s" gives SI prefixes (k, M, G; m, µ below one), so
# 0.042 s ticks as "42ms" and 5e10 B/s as "50GB/s" — the same reading as the tiles.
_AXIS = {
    "seconds": ("~s", "s"),
    "bytes_per_second": ("~s", "B/s"),
    "watts": ("~s", "W"),
    "joules": ("~s", "J"),
    "ratio": (".0%", ""),
    "count": ("~s", ""),
}


def unit_axis(unit: str) -> dict:
    """``tickformat``/``ticksuffix``/``hoverformat`` for a value axis in ``unit``."""
    if unit not in _AXIS:
        return {}
    tickformat, suffix = _AXIS[unit]
    axis = {"tickformat": tickformat, "hoverformat": ".3~s" if "s" in tickformat else ".1%"}
    if suffix:
        axis["ticksuffix"] = suffix
    return axis


def _layout(
    title: str, *, y_title: str = "", y_format: str = "", y_unit: str = "", **extra: Any
) -> dict:
    layout = {
        "title": {"text": chart_text(title)},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
        "legend": {"orientation": "h", "y": -0.2},
        "hovermode": "x unified",
        "yaxis": {"title": {"text": chart_text(y_title)}, "rangemode": "tozero"},
        "xaxis": {"type": "date"},
    }
    layout["yaxis"].update(unit_axis(y_unit))
    if y_format:
        layout["yaxis"]["tickformat"] = y_format
    layout.update(extra)
    return layout


def _line_trace(name: str, points: Sequence[Point], line: dict, **extra) -> dict:
    """One line trace of ``(time, value)`` points; a gap in the data stays a gap."""
    xs, ys = _xy(points)
    return {
        "type": "scatter",
        "mode": "lines",
        "name": chart_text(name),
        **extra,
        "x": xs,
        "y": ys,
        "connectgaps": False,
        "line": line,
    }


def timeseries(
    series: dict[str, Sequence[Point]],
    *,
    title: str,
    y_title: str = "",
    y_format: str = "",
    y_unit: str = "",
) -> Figure:
    """One line per named series of ``(time, value)`` points; ``y_unit`` (a catalogue unit)
    picks the axis's tick and hover format, e.g. "42ms" or "1.2GB/s"."""
    data = [
        _line_trace(name, points, {"color": colour(i), "width": 2})
        for i, (name, points) in enumerate(series.items())
    ]
    layout = _layout(title, y_title=y_title, y_format=y_format, y_unit=y_unit)
    return {"data": data, "layout": layout}


def utilization_area(
    stacked: dict[str, Sequence[Point]],
    *,
    lines: dict[str, Sequence[Point]] | None = None,
    title: str,
    y_title: str = "",
    y_format: str = "",
) -> Figure:
    """Stacked areas (e.g. training vs inference cards) with optional overlay lines.

    Overlay lines use dashes as well as colour, so they are told apart without colour.
    """
    data = [
        _line_trace(name, points, {"color": colour(i), "width": 1}, stackgroup="one")
        for i, (name, points) in enumerate(stacked.items())
    ]
    for j, (name, points) in enumerate((lines or {}).items()):
        style = {
            "color": colour(len(stacked) + j),
            "width": 2,
            "dash": ("dash", "dot", "dashdot")[j % 3],
        }
        data.append(_line_trace(name, points, style))
    return {"data": data, "layout": _layout(title, y_title=y_title, y_format=y_format)}


def heatmap(
    matrix: Sequence[Sequence[float | None]],
    *,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    title: str,
    value_title: str = "",
    links: Sequence[Sequence[str | None]] | None = None,
    z_range: tuple[float, float] | None = None,
    value_format: str = ".2f",
) -> Figure:
    """A heatmap of ``matrix[row][column]``; ``links`` (same shape) become each cell's
    ``customdata`` so a click can drill down to that cell's page."""
    if len(matrix) != len(y_labels) or any(len(row) != len(x_labels) for row in matrix):
        raise ValueError("matrix shape must be len(y_labels) x len(x_labels)")
    trace: dict[str, Any] = {
        "type": "heatmap",
        "z": [[_clean(v) for v in row] for row in matrix],
        "x": chart_texts(x_labels),
        "y": chart_texts(y_labels),
        "colorscale": HEATMAP_COLORSCALE,
        "colorbar": {"title": {"text": chart_text(value_title)}},
        "hoverongaps": False,
        "xgap": 2,
        "ygap": 2,
        "hovertemplate": f"%{{y}} · %{{x}}<br>%{{z:{value_format}}}<extra></extra>",
    }
    if z_range is not None:
        trace["zmin"], trace["zmax"] = z_range
    if links is not None:
        trace["customdata"] = [list(row) for row in links]
    layout = {
        "title": {"text": chart_text(title)},
        "margin": {"l": 80, "r": 20, "t": 50, "b": 60},
        "xaxis": {"type": "category"},
        "yaxis": {"type": "category", "autorange": "reversed"},
    }
    return {"data": [trace], "layout": layout}


def bars(
    categories: Sequence[str],
    groups: dict[str, Sequence[float | None]],
    *,
    title: str,
    y_title: str = "",
    y_format: str = "",
    stacked: bool = False,
) -> Figure:
    """Grouped (or stacked) bars: one bar series per group, one bar per category."""
    data = [
        {
            "type": "bar",
            "name": chart_text(name),
            "x": chart_texts(categories),
            "y": [_clean(v) for v in values],
            "marker": {"color": colour(i)},
        }
        for i, (name, values) in enumerate(groups.items())
    ]
    layout = _layout(
        title, y_title=y_title, y_format=y_format, barmode="stack" if stacked else "group"
    )
    layout["xaxis"] = {"type": "category"}
    layout["hovermode"] = "closest"
    return {"data": data, "layout": layout}


def has_data(figure: Figure) -> bool:
    """True when at least one trace has a plotted value (the page says "no data" otherwise)."""
    for trace in figure.get("data", []):
        values = trace.get("z") or trace.get("y") or []
        flat = [v for row in values for v in (row if isinstance(row, list) else [row])]
        if any(v is not None for v in flat):
            return True
    return False
