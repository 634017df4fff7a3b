"""Hardware payloads: rack heatmaps with drill-down links, and rack/node/card detail."""

from __future__ import annotations

from collections.abc import Callable

from django.utils.translation import gettext as _

from dashboards import charts
from dashboards.payloads.common import Points, kpi, scaled, series_table, table
from dashboards.selectors.hardware import CARD_METRICS, HardwareData, MemberRow
from dashboards.selectors.hotspots import CardRow

CARD_COLUMNS = (
    "card",
    "health",
    "utilization_ratio",
    "temperature_celsius",
    "hbm_used_ratio",
    "power_watts",
    "rack_id",
)


def health_label(code: str) -> str:
    """A card's health in the reader's language."""
    return {"healthy": _("healthy"), "unhealthy": _("unhealthy"), "unknown": _("unknown")}.get(
        code, code
    )


def card_table(rows: list[CardRow], card_url: Callable[[int], str]) -> dict:
    """A top-N list of cards; ``links`` maps each card's label to its page."""
    out = table(
        CARD_COLUMNS,
        [
            _("card"),
            _("health"),
            _("utilization"),
            _("temperature (°C)"),
            _("HBM used"),
            _("power"),
            _("rack id"),
        ],
        [
            [
                r.card,
                health_label(r.health),
                r.utilization,
                r.temperature,
                r.hbm_used_ratio,
                r.power,
                r.rack_id,
            ]  # fmt: skip
            for r in rows
        ],
    )
    out["links"] = {r.card: card_url(r.accelerator_id) for r in rows if r.accelerator_id}
    return out


def hardware_payload(
    data: HardwareData,
    rack_url: Callable[[int], str],
    card_url: Callable[[int], str] | None = None,
) -> dict:
    """Three heatmaps (supernode × rack); each cell's customdata is its rack page URL."""
    figures = {}
    specs = (
        (
            "utilization",
            _("Accelerator utilization (mean per rack)"),
            _("utilization"),
            (0, 1),
            ".0%",
        ),
        ("temperature", _("Temperature (mean per rack, °C)"), "°C", None, ".1f"),
        ("hbm_used_ratio", _("HBM used / capacity (per rack)"), _("HBM used"), (0, 1), ".0%"),
    )
    for attribute, title, value_title, z_range, value_format in specs:
        supernodes, names, values, ids = data.matrix(attribute)
        links = [[rack_url(pk) if pk else None for pk in row] for row in ids]
        figures[attribute] = charts.heatmap(
            values,
            x_labels=names,
            y_labels=supernodes,
            title=title,
            value_title=str(value_title),
            links=links,
            z_range=z_range,
            value_format=value_format,
        )
    health = data.health
    kpis = [
        kpi(
            "cards_total",
            _("Cards"),
            float(data.cards_total),
            "count",
            hint={
                "promql": _(
                    "rack figures summed per host by the PromQL server; hotspots are its top "
                    "cards and every failing card"
                ),
                "promql-rules": _(
                    "rack figures from the PromQL server's per-host recording rules "
                    "(cluster_portal:…:sum_by_host; the shipped rules record every 30 s); "
                    "hotspots are its top cards and every failing card"
                ),
                "promql-rules-racks": _(
                    "rack figures from the PromQL server's per-rack recording rules "
                    "(cluster_portal:…:sum_by_rack: per-host figures joined on the server with "
                    "the portal's node placement, cluster_portal_node_rack from "
                    "/metrics/topology, as of its last scrape); hotspots are its top cards and "
                    "every failing card"
                ),
            }.get(data.aggregated_by, ""),
        ),
        kpi("healthy", _("Healthy"), float(health.get("healthy", 0)), "count"),
        # The count links to the list of those cards (issue 24: "Unhealthy 1" led nowhere).
        {
            **kpi("unhealthy", _("Unhealthy"), float(health.get("unhealthy", 0)), "count"),
            "href": "#least-healthy",
        },
        kpi("unknown", _("Unknown health"), float(health.get("unknown", 0)), "count"),
    ]
    racks = table(
        [
            "supernode",
            "rack",
            "rack_id",
            "cards",
            "utilization_ratio",
            "temperature_celsius",
            "hbm_used_ratio",
        ],
        [
            _("supernode"),
            _("rack"),
            _("id"),
            _("cards"),
            _("utilization"),
            _("temperature (°C)"),
            _("HBM used"),
        ],
        [
            [
                c.supernode,
                c.rack,
                c.rack_id,
                c.cards,
                c.utilization,
                c.temperature,
                c.hbm_used_ratio,
            ]
            for c in data.racks
        ],
    )
    tables = {"racks": racks}
    if data.hotspots is not None:
        card = card_url or (lambda pk: "")
        tables["hottest_cards"] = card_table(data.hotspots.hottest, card)
        tables["busiest_cards"] = card_table(data.hotspots.busiest, card)
        tables["least_healthy_cards"] = card_table(data.hotspots.least_healthy, card)
    return {
        "kpis": kpis,
        "figures": figures,
        "tables": tables,
        "links": {str(c.rack_id): rack_url(c.rack_id) for c in data.racks if c.rack_id},
    }


def members_table(rows: list[MemberRow], *, cards: bool) -> dict:
    names = CARD_METRICS if cards else CARD_METRICS[:3]
    return table(
        ["id", "name", "cards", *names],
        [_("id"), _("name"), _("cards"), *names],
        [[r.pk, r.name, r.cards, *(r.values.get(n) for n in names)] for r in rows],
    )


def entity_series_payload(series: dict[str, Points], title: str) -> dict:
    """Charts for a rack, node or card: utilization, temperature, HBM, power."""
    figures, tables = {}, {}
    specs = {
        "rack_utilization_ratio": (_("Utilization"), ".0%", 1.0),
        "node_utilization_ratio": (_("Utilization"), ".0%", 1.0),
        "accelerator_utilization_ratio": (_("Utilization"), ".0%", 1.0),
        "accelerator_temperature_celsius": (_("Temperature (°C)"), "", 1.0),
        "accelerator_hbm_used_bytes": (_("HBM used (GiB)"), "", 1 / 2**30),
        "accelerator_power_watts": (_("Power"), "", 1.0),
        "rack_power_watts": (_("Power"), "", 1.0),
        "node_power_watts": (_("Power"), "", 1.0),
    }
    for name, points in series.items():
        label, y_format, factor = specs.get(name, (name, "", 1.0))
        figures[name] = charts.timeseries(
            {str(label): scaled(points, factor)},
            title=f"{title} · {label}",
            y_format=y_format,
            y_unit="watts" if name.endswith("_watts") else "",
        )
        tables[name] = series_table({name: points})
    return {"kpis": [], "figures": figures, "tables": tables}
