"""Pure Plotly figure builders for the cost page and the validation report (data in, dict out).

Colours are the Okabe-Ito palette, distinguishable with the common colour-vision deficiencies.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from cluster_portal.web.chartgaps import break_gaps
from cluster_portal.web.charttext import chart_text, chart_texts

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")


def _layout(
    title: str,
    y_title: str,
    *,
    percent: bool = False,
    barmode: str | None = None,
    money: bool = False,
) -> dict:
    layout: dict = {
        "title": {"text": chart_text(title)},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
        "yaxis": {"title": {"text": chart_text(y_title)}, "rangemode": "tozero"},
        "legend": {"orientation": "h"},
    }
    if percent:
        layout["yaxis"]["tickformat"] = ".0%"
    if money:
        # Amounts read as amounts: thousands separators and cents, never "12k" or "1.2M".
        layout["yaxis"]["tickformat"] = ",.2~f"
        layout["yaxis"]["hoverformat"] = ",.2f"
    if barmode:
        layout["barmode"] = barmode
    return layout


def stacked_bars(
    title: str,
    categories: Sequence[str],
    stacks: dict[str, Sequence[float]],
    y_title: str,
    *,
    money: bool = False,
) -> dict:
    """One bar per category, one stacked segment per ``stacks`` entry (e.g. capex, energy)."""
    data = [
        {
            "type": "bar",
            "name": chart_text(name),
            "x": chart_texts(categories),
            "y": [round(v, 4) for v in values],
            "marker": {"color": PALETTE[i % len(PALETTE)]},
        }
        for i, (name, values) in enumerate(stacks.items())
    ]
    return {"data": data, "layout": _layout(title, y_title, barmode="stack", money=money)}


def grouped_bars(
    title: str,
    categories: Sequence[str],
    groups: dict[str, Sequence[float | None]],
    y_title: str,
    *,
    money: bool = False,
) -> dict:
    """Side-by-side bars (e.g. split vs unified per metric); ``None`` values are left out."""
    data = [
        {
            "type": "bar",
            "name": chart_text(name),
            "x": chart_texts(categories),
            "y": list(values),
            "marker": {"color": PALETTE[i % len(PALETTE)]},
        }
        for i, (name, values) in enumerate(groups.items())
    ]
    return {"data": data, "layout": _layout(title, y_title, barmode="group", money=money)}


def lines(
    title: str,
    series: dict[str, tuple[Sequence[datetime | float], Sequence[float]]],
    y_title: str,
    *,
    percent: bool = False,
) -> dict:
    """One line per named series of ``(x, y)``; datetimes become ISO strings for JSON."""
    data = []
    for i, (name, (raw_xs, raw_ys)) in enumerate(series.items()):
        xs, ys = break_gaps(raw_xs, raw_ys)  # no line across a hole in the data
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": chart_text(name),
                "x": [x.isoformat() if isinstance(x, datetime) else x for x in xs],
                "y": ys,
                "connectgaps": False,
                "line": {"color": PALETTE[i % len(PALETTE)], "dash": ("solid", "dash")[i % 2]},
            }
        )
    return {"data": data, "layout": _layout(title, y_title, percent=percent)}


def bars_by_time(
    title: str,
    series: dict[str, tuple[Sequence[datetime], Sequence[float]]],
    y_title: str,
    *,
    money: bool = False,
) -> dict:
    """Grouped bars over a time axis (e.g. idle cost per hour and cluster): a bar per bucket
    with data, so an hour without telemetry is a gap, never a line drawn across it."""
    data = [
        {
            "type": "bar",
            "name": chart_text(name),
            "x": [x.isoformat() for x in xs],
            "y": [round(v, 2) for v in ys],
            "marker": {"color": PALETTE[i % len(PALETTE)]},
        }
        for i, (name, (xs, ys)) in enumerate(series.items())
    ]
    return {"data": data, "layout": _layout(title, y_title, barmode="group", money=money)}
