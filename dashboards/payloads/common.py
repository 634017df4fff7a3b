"""Formatting and table helpers shared by the payload builders (pure functions)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _

Points = list[tuple[datetime, float]]


def fmt(value: float | None, unit: str) -> str:
    """A KPI value for display; "—" when missing."""
    if value is None:
        return "—"
    if unit == "ratio":
        return f"{value * 100:.1f}%"
    if unit == "seconds_as_ms":
        return _("%(ms)s ms") % {"ms": f"{value * 1000:,.0f}"}
    if unit == "seconds":
        return _("%(s)s s") % {"s": f"{value:,.1f}"}
    if unit == "bytes":
        for size, suffix in ((2**50, "PiB"), (2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB")):
            if abs(value) >= size:
                return f"{value / size:,.1f} {suffix}"
        return f"{value:,.0f} B"
    if unit == "celsius":
        return f"{value:.0f} °C"
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def kpi(key: str, label: str, value: float | None, unit: str, *, hint: str = "") -> dict:
    return {
        "key": key,
        "label": str(label),
        "value": value,
        "unit": unit,
        "display": fmt(value, unit),
        "hint": str(hint),
    }


def table(columns: Sequence[str], labels: Sequence[str], rows: list[list[Any]]) -> dict:
    """A table: stable column ids (CSV headers), translated labels (page headers), rows."""
    return {"columns": list(columns), "labels": [str(x) for x in labels], "rows": rows}


def series_table(series: dict[str, Points], labels: dict[str, str] | None = None) -> dict:
    """Several series on one time axis, one column each (empty cell where one has no point)."""
    stamps = sorted({ts for points in series.values() for ts, _ in points})
    lookup = {name: dict(points) for name, points in series.items()}
    rows = [[ts.isoformat()] + [lookup[name].get(ts) for name in series] for ts in stamps]
    labels = labels or {}
    return table(["ts", *series], [_("time"), *(labels.get(n, n) for n in series)], rows)


def scaled(points: Points, factor: float) -> Points:
    return [(ts, v * factor) for ts, v in points]
