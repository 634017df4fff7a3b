"""The card page's swimlane as a Plotly figure: time across, one lane per source of
attribution (the scheduler's allocation, the exporters' labels), one bar per holding coloured
by tenant and labelled with its job or pod. Drawn by ``static/js/swimlane.js``."""

from __future__ import annotations

from django.utils.translation import gettext as _

from cluster_portal.web.charttext import chart_text
from dashboards.charts import Figure, colour, iso_time
from dashboards.selectors.card_holders import CardHolders
from telemetry.models import AttributionKind

GREY = "#999999"


def lane_label(kind: str) -> str:
    return _("scheduler") if kind == AttributionKind.SCHEDULER else _("exporter labels")


def card_swimlane_figure(holders: CardHolders) -> Figure:
    """One horizontal-bar trace per tenant (the legend), bars placed by ``base`` (start) and
    length in milliseconds on a date axis."""
    tenants: dict[str, list] = {}
    for holding in holders.holdings:
        tenants.setdefault(holding.tenant or _("tenant not known"), []).append(holding)
    data = []
    for index, (tenant, items) in enumerate(sorted(tenants.items())):
        known = any(h.tenant_id for h in items)
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": chart_text(tenant),
                "base": [iso_time(h.start) for h in items],
                "x": [round((h.until - h.start).total_seconds() * 1000) for h in items],
                "y": [chart_text(lane_label(h.kind)) for h in items],
                "text": [chart_text(h.holder) for h in items],
                "textposition": "inside",
                "insidetextanchor": "middle",
                "marker": {"color": colour(index) if known else GREY},
                "customdata": [
                    [iso_time(h.start), iso_time(h.until), chart_text(h.holder)] for h in items
                ],
                "hovertemplate": chart_text(tenant)
                + " · %{customdata[2]}<br>%{customdata[0]|%Y-%m-%d %H:%M} – "
                "%{customdata[1]|%H:%M}<extra>%{y}</extra>",
            }
        )
    lanes = [lane_label(AttributionKind.SCHEDULER), lane_label(AttributionKind.EXPORTER)]
    return {
        "data": data,
        "layout": {
            "barmode": "overlay",
            "margin": {"l": 110, "r": 20, "t": 20, "b": 40},
            "height": 220,
            "showlegend": True,
            "legend": {"orientation": "h", "y": -0.35},
            "xaxis": {
                "type": "date",
                "range": [iso_time(holders.start), iso_time(holders.end)],
            },
            "yaxis": {
                "type": "category",
                "categoryorder": "array",
                "categoryarray": [chart_text(lane) for lane in reversed(lanes)],
                "range": [-0.5, 1.5],
            },
        },
    }
