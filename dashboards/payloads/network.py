"""Network payload: links by status and load, failures, self-healing, communication share."""

from __future__ import annotations

from collections.abc import Callable

from django.utils.translation import gettext as _

from dashboards import charts
from dashboards.payloads.common import kpi, series_table, table
from dashboards.selectors.network import LinkRow, NetworkData

STATUS_ORDER = ("up", "degraded", "rerouting", "down")


LINK_COLUMNS = ["link", "kind", "status", "utilization_ratio", "capacity_bytes_per_s"]


def link_table(rows: list[LinkRow], rack_url: Callable[[int], str] | None = None) -> dict:
    """Links as a table; with ``rack_url``, each link's key links to its rack's page."""
    out = table(
        LINK_COLUMNS,
        [_("link"), _("kind"), _("status"), _("utilization"), _("capacity")],
        [[r.key, r.kind, r.status, r.utilization, r.capacity_bytes_per_s] for r in rows],
    )
    if rack_url is not None:
        out["links"] = {r.key: rack_url(r.rack_id) for r in rows if r.rack_id}
    return out


def network_payload(data: NetworkData, rack_url: Callable[[int], str] | None = None) -> dict:
    counts = data.status_counts
    s = data.series
    statuses = [x for x in STATUS_ORDER if x in counts] + sorted(set(counts) - set(STATUS_ORDER))
    kpis = [
        kpi("links_total", _("Links"), float(data.links_total), "count"),
        kpi("links_up", _("Up"), float(counts.get("up", 0)), "count"),
        {
            **kpi("links_down", _("Down"), float(counts.get("down", 0)), "count"),
            "href": "#unhealthy-links",
        },
        kpi(
            "links_rerouting",
            _("Rerouting (self-healing)"),
            float(counts.get("rerouting", 0)),
            "count",
        ),
        kpi("link_failures", _("Link failures in range"), data.link_failures_in_range, "count"),
        kpi(
            "rerouting_time",
            _("Link time spent rerouting in range"),
            data.rerouting_link_seconds,
            "seconds",
        ),
        kpi(
            "communication_ratio",
            _("Communication share of training step time"),
            data.communication_ratio,
            "ratio",
        ),
    ]
    figures = {
        "status": charts.bars(
            statuses,
            {_("links"): [counts[x] for x in statuses]},
            title=_("Links by status"),
            y_title=_("links"),
        ),
        "utilization_histogram": charts.bars(
            [label for label, _n in data.utilization_histogram],
            {_("links"): [n for _label, n in data.utilization_histogram]},
            title=_("Links by utilization"),
            y_title=_("links"),
        ),
        "health_over_time": charts.timeseries(
            {_("links down"): s["links_down"], _("links rerouting"): s["links_rerouting"]},
            title=_("Link failures and self-healing over time"),
            y_title=_("links"),
        ),
        "load_over_time": charts.timeseries(
            {
                _("mean link utilization"): s["link_utilization_mean"],
                _("communication share of training step time"): s["training_communication_ratio"],
            },
            title=_("Fabric load and training communication share"),
            y_format=".0%",
        ),
    }
    tables = {
        "links": link_table(data.links, rack_url),
        "busiest_links": link_table(data.busiest, rack_url),
        "unhealthy_links": link_table(data.unhealthy, rack_url),
        "status": table(
            ["status", "links"], [_("status"), _("links")], [[x, counts[x]] for x in statuses]
        ),
        "utilization_histogram": table(
            ["utilization", "links"],
            [_("utilization"), _("links")],
            [list(x) for x in data.utilization_histogram],
        ),
        "health_over_time": series_table(
            {"links_down": s["links_down"], "links_rerouting": s["links_rerouting"]}
        ),
        "load_over_time": series_table(
            {
                "link_utilization_mean": s["link_utilization_mean"],
                "training_communication_ratio": s["training_communication_ratio"],
            }
        ),
    }
    notice = ""
    if not data.links_total:
        # Exporters (dcgm-exporter, npu-exporter) report cards, not fabric links: say so
        # instead of showing zero links as if the fabric were empty.
        notice = str(_("No link data from this source."))
        for item in kpis:
            item["hint"] = notice
        for figure in figures.values():
            layout = figure.setdefault("layout", {})
            title = layout.get("title")
            if isinstance(title, dict):
                title["text"] = f"{title.get('text', '')} ({notice})"
            else:
                layout["title"] = f"{title or ''} ({notice})"
    return {
        "notice": notice,
        "kpis": kpis,
        "figures": figures,
        "tables": tables,
        "utilization_distinct": data.utilization_distinct,
    }
