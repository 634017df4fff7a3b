"""The twin's simulated clock on wall-time charts: shaded simulated nights and the simulated
time of day in every hover.

The twin runs faster than real time and stamps its steps with wall-clock times, so the
overview's time axis alone hides which part was the simulated night (when training takes
the cards). The twin also records its clock as cluster scalars (``twin_simulated_hour_of_day``
and ``twin_night_window_active``); this module turns those into shapes and hover text. A
source without a simulated clock (real exporters) leaves the charts as they were.
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime

from django.utils.translation import gettext as _

from cluster_portal.web.charttext import chart_text
from dashboards.payloads.common import Points

NIGHT_FILL = "#0b3d91"  # dark blue at low opacity: reads as "night" and stays colour-blind safe


def clock_text(hour: float) -> str:
    """``23.5`` → "23:30"."""
    minutes = int(round(hour * 60)) % (24 * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def night_bands(night: Points) -> list[tuple[datetime, datetime]]:
    """Contiguous runs of points with the night flag set, as ``(first, end)`` wall times; a run
    ends at the next point's time (or its own last point)."""
    bands: list[tuple[datetime, datetime]] = []
    start = None
    for i, (ts, value) in enumerate(night):
        on = value is not None and value >= 0.5
        if on and start is None:
            start = ts
        if start is not None and (not on or i == len(night) - 1):
            bands.append((start, ts))
            start = None
    return bands


def _hover_format(layout: dict) -> str:
    axis = layout.get("yaxis", {})
    fmt = axis.get("hoverformat") or axis.get("tickformat") or ""
    return f"%{{y:{fmt}}}{axis.get('ticksuffix', '')}" if fmt else "%{y}"


def add_simulated_clock(figures: dict, hours: Points, night: Points) -> bool:
    """Shade the simulated nights and put the simulated clock in each time chart's hover.

    Returns True when there was a simulated clock to show."""
    if not hours:
        return False
    stamps = [ts for ts, _v in hours]
    labels = [clock_text(v) if v is not None else "" for _ts, v in hours]
    bands = night_bands(night)
    sim_label = chart_text(_("simulated"))
    night_label = chart_text(_("simulated night"))
    label_at: dict[str | datetime, str] = {}
    for figure in figures.values():
        layout = figure.get("layout", {})
        if layout.get("xaxis", {}).get("type") != "date":
            continue
        value = _hover_format(layout)
        for trace in figure.get("data", []):
            custom = []
            for x in trace.get("x", []):
                # The charts share their time axis: each stamp is looked up once per page.
                label = label_at.get(x)
                if label is None:
                    ts = datetime.fromisoformat(x) if isinstance(x, str) else x
                    i = bisect_right(stamps, ts) - 1
                    label = label_at[x] = labels[i] if i >= 0 else ""
                custom.append(label)
            trace["customdata"] = custom
            trace["hovertemplate"] = (
                f"{trace.get('name', '')}: {value} · {sim_label} %{{customdata}}<extra></extra>"
            )
        layout["shapes"] = [
            *layout.get("shapes", []),
            *(
                {
                    "type": "rect",
                    "xref": "x",
                    "yref": "paper",
                    "x0": first.isoformat(),
                    "x1": last.isoformat(),
                    "y0": 0,
                    "y1": 1,
                    "fillcolor": NIGHT_FILL,
                    "opacity": 0.16,
                    "line": {"width": 0},
                    "layer": "below",
                    # One legend entry names the shading (Plotly.js ≥ 2.29 shape legends);
                    # an annotation would sit under the mode bar.
                    "name": night_label,
                    "legendgroup": "simulated-night",
                    "showlegend": i == 0,
                }
                for i, (first, last) in enumerate(bands)
            ),
        ]
    return True
