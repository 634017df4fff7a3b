"""Formatting and table helpers shared by the payload builders (pure functions)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _

from cluster_portal.web.units import format_value, unit_for_metric

Points = list[tuple[datetime, float]]


def fmt(value: float | None, unit: str) -> str:
    """A KPI value for display by its unit (:mod:`cluster_portal.web.units`); "—" if missing."""
    return format_value(value, unit)


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
    """A table: stable column ids (CSV headers), translated labels (page headers), rows, and
    each column's unit (read from its name) so the page formats cells: 5e10 → "50 GB/s"."""
    return {
        "columns": list(columns),
        "labels": [str(x) for x in labels],
        "rows": rows,
        "units": [unit_for_metric(c) for c in columns],
    }


def series_table(series: dict[str, Points], labels: dict[str, str] | None = None) -> dict:
    """Several series on one time axis, one column each (empty cell where one has no point)."""
    stamps = sorted({ts for points in series.values() for ts, _ in points})
    lookup = {name: dict(points) for name, points in series.items()}
    rows = [[ts.isoformat()] + [lookup[name].get(ts) for name in series] for ts in stamps]
    labels = labels or {}
    return table(["ts", *series], [_("time"), *(labels.get(n, n) for n in series)], rows)


def scaled(points: Points, factor: float) -> Points:
    return [(ts, v * factor) for ts, v in points]
