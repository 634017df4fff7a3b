"""Formatting and table helpers shared by the payload builders (pure functions)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from cluster_portal.web.units import format_value, unit_for_metric
from dashboards.charts import iso_time

Points = list[tuple[datetime, float]]


def fmt(value: float | None, unit: str) -> str:
    """A KPI value for display by its unit (:mod:`cluster_portal.web.units`); "—" if missing."""
    return format_value(value, unit)


def source_text(source: str | None) -> str:
    """Where a figure came from, in words (``telemetry.read.fleet.SOURCE_*``)."""
    return str(
        {
            "twin": _("from the twin"),
            "exporters": _("from exporters"),
            "derived": _("derived from card samples"),
            "promql": _("derived from the PromQL source's card series"),
            "promql-rules": _(
                "from the PromQL source's recording rules where it records the figure "
                "(cluster_portal:…; the shipped rules record every 30 s)"
            ),
            "promql-rules-racks": _(
                "from the PromQL source's per-rack recording rules (cluster_portal:…_by_rack: "
                "hosts joined on the server with the portal's placement from /metrics/topology)"
            ),
        }.get(source or "", "")
    )


def whole_requests(count: float | None) -> int | None:
    """A request counter as whole requests. Why: the twin's model accumulates expected
    (fractional) timeouts, and a tile read "timed out 0.401" — not a number of requests."""
    return None if count is None else int(round(count))


def kpi(key: str, label: str, value: float | None, unit: str, *, hint: str = "") -> dict:
    return {
        "key": key,
        "label": str(label),
        "value": value,
        "unit": unit,
        "display": fmt(value, unit),
        "hint": str(hint),
        "source": "",  # where the figure came from, when a page says so (see source_text)
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
    # Column by column, then zipped into rows: a 24-hour overview table has ~5,000 cells.
    columns = [[iso_time(ts) for ts in stamps]]
    for points in series.values():
        values = dict(points)
        columns.append([values.get(ts) for ts in stamps])
    rows = [list(row) for row in zip(*columns, strict=True)]
    labels = labels or {}
    return table(["ts", *series], [_("time"), *(labels.get(n, n) for n in series)], rows)


def scaled(points: Points, factor: float) -> Points:
    return [(ts, v * factor) for ts, v in points]


# A range whose first point comes later than this share of its span (and at least a few
# minutes in) is "longer than the data": the page says where the data begins.
DATA_START_SHARE = 0.02
DATA_START_MIN = timedelta(minutes=5)


def _first_time(figures: dict) -> datetime | None:
    first = None
    for figure in figures.values():
        if figure.get("layout", {}).get("xaxis", {}).get("type") != "date":
            continue
        for trace in figure.get("data", []):
            # Points are in time order: the trace's first present value is its earliest.
            x = next(
                (
                    x
                    for x, y in zip(trace.get("x", []), trace.get("y", []), strict=False)
                    if y is not None
                ),
                None,
            )
            if x is None:
                continue
            ts = datetime.fromisoformat(x) if isinstance(x, str) else x
            first = ts if first is None or ts < first else first
    return first


def mark_data_start(payload: dict, start: datetime, end: datetime) -> dict:
    """On a range that reaches back before the first data, pin every time chart to the whole
    range, shade the part with no data and add ``payload["data_start"]`` with a sentence
    naming the first data's time. A 30-day chart of a cluster that is 40 minutes old then
    shows 30 days with a sliver of data, not one point under millisecond ticks."""
    first = _first_time(payload.get("figures", {}))
    span = end - start
    if first is None or first - start <= max(span * DATA_START_SHARE, DATA_START_MIN):
        return payload
    when = date_format(timezone.localtime(first), "Y-m-d H:i T")
    note = _("No data before %(when)s: the range starts earlier than the data.") % {"when": when}
    payload["data_start"] = {"ts": first.isoformat(), "note": note}
    for figure in payload.get("figures", {}).values():
        layout = figure.get("layout", {})
        if layout.get("xaxis", {}).get("type") != "date":
            continue
        layout["xaxis"]["range"] = [start.isoformat(), end.isoformat()]
        layout["shapes"] = [
            *layout.get("shapes", []),
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": start.isoformat(),
                "x1": first.isoformat(),
                "y0": 0,
                "y1": 1,
                "fillcolor": "#d0d7de",
                "opacity": 0.25,
                "line": {"width": 0},
                "layer": "below",
            },
        ]
    return payload
