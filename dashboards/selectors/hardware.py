"""Hardware page data: per-rack heatmaps from the newest card frames, and the drill-down
from a rack to its nodes and cards."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.db.models import Count
from django.utils.translation import gettext as _

from cluster_portal.web.caching import shared_read
from cluster_portal.web.sorting import natural_key
from cluster_portal.web.timerange import TimeRange
from dashboards.selectors.common import finite, metric_defs
from dashboards.selectors.hotspots import TOP_N, CardHotspots, card_hotspots
from inventory.models import Accelerator, Cluster, Node, Rack
from telemetry.models import Entity
from telemetry.read import (
    Points,
    RackCardFigures,
    cards_latest,
    health_counts,
    rack_card_figures,
    series_points_many,
)
from telemetry.read.fleet import HBM_TOTAL, HBM_USED, HEALTH, TEMPERATURE, UTIL, CardAgg

CARD_METRICS = (
    "accelerator_utilization_ratio",
    "accelerator_temperature_celsius",
    "accelerator_hbm_used_bytes",
    "accelerator_hbm_total_bytes",
    "accelerator_power_watts",
    "accelerator_health_status",
)
CARD_SERIES = CARD_METRICS[:3] + ("accelerator_power_watts",)


UNASSIGNED = 0  # the rack id of the row of cards without a rack (no drill-down page)


@dataclass
class RackCell:
    rack_id: int
    supernode: str
    rack: str  # short name inside the supernode
    cards: int
    utilization: float | None
    temperature: float | None
    hbm_used_ratio: float | None


@dataclass
class HardwareData:
    cluster: Cluster
    racks: list[RackCell] = field(default_factory=list)
    health: dict[str, int] = field(default_factory=dict)
    cards_total: int = 0
    ts: object = None
    hotspots: CardHotspots | None = None
    # "store", "promql" (per-host sums from the server), "promql-rules" (per-host recording
    # rules) or "promql-rules-racks" (per-rack recording rules)
    aggregated_by: str = ""

    def matrix(self, attribute: str) -> tuple[list[str], list[str], list[list], list[list]]:
        """``(supernodes, rack names, values[supernode][rack], rack ids)`` for a heatmap."""
        supernodes = sorted({c.supernode for c in self.racks}, key=natural_key)
        names = sorted({c.rack for c in self.racks}, key=natural_key)
        values = [[None] * len(names) for _ in supernodes]
        ids: list[list] = [[None] * len(names) for _ in supernodes]
        for cell in self.racks:
            i, j = supernodes.index(cell.supernode), names.index(cell.rack)
            values[i][j] = getattr(cell, attribute)
            ids[i][j] = cell.rack_id
        return supernodes, names, values, ids


def _mean(agg: CardAgg | None) -> float | None:
    return finite(agg.total / agg.cards) if agg is not None and agg.cards else None


def _ratio(used: CardAgg | None, total: CardAgg | None) -> float | None:
    if used is None or total is None or total.total <= 0:
        return None
    return finite(used.total / total.total)


def _rack_figures(cluster: Cluster) -> RackCardFigures:
    """:func:`telemetry.read.rack_card_figures`, shared for ``DASHBOARD_CACHE_SECONDS`` by
    every reader of the page (the figures do not depend on the range picked)."""
    return shared_read(
        "rack-card-figures",
        (cluster.pk,),
        lambda: rack_card_figures(cluster.pk, CARD_METRICS, hot_n=TOP_N),
    )


def hardware(cluster: Cluster) -> HardwareData:
    """Per-rack means of the newest card values, and health counts.

    Read as per-rack sums and counts (a PromQL source aggregates them by host in the query:
    the answer grows with the nodes, not the cards) plus the few hotspot candidates; one
    query for the card count and one for the racks.
    """
    data = HardwareData(cluster=cluster)
    figures = _rack_figures(cluster)
    data.ts, data.aggregated_by = figures.ts, figures.source
    data.hotspots = card_hotspots(cluster, figures.hot)
    racks = list(
        Rack.objects.filter(supernode__cluster=cluster).values_list("pk", "name", "supernode__name")
    )
    cards = Entity.objects.filter(cluster=cluster, kind="accelerator")
    # A MIG slice is an entity of its own (its pod, its memory) but not another card. One
    # count per rack, the total their sum (a second count costs as much at 100k cards).
    cards_per_rack = dict(
        cards.filter(accelerator__parent__isnull=True)
        .values_list("rack_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    data.cards_total = int(sum(cards_per_rack.values()))
    known = {pk for pk, _, _ in racks}
    for pk, name, supernode in racks:
        metrics = figures.racks.get(pk, {})
        data.racks.append(
            RackCell(
                pk,
                supernode,
                name.rsplit("/", 1)[-1],
                int(cards_per_rack.get(pk, 0)),
                _mean(metrics.get(UTIL)),
                _mean(metrics.get(TEMPERATURE)),
                _ratio(metrics.get(HBM_USED), metrics.get(HBM_TOTAL)),
            )
        )
    # The racks table reads r0, r1, r2, … r10 (the database orders by primary key).
    data.racks.sort(key=lambda c: (natural_key(c.supernode), natural_key(c.rack)))
    # Cards with no rack (exporters know none until a label mapping or an inventory import
    # places their nodes) are one row of their own, not left off the heatmap.
    unplaced: dict[str, CardAgg] = {}
    for rack, metrics in figures.racks.items():
        if rack is None or rack not in known:
            for name, agg in metrics.items():
                unplaced.setdefault(name, CardAgg()).add(agg.cards, agg.total, agg.ones)
    without_rack = int(cards_per_rack.get(None, 0))
    if without_rack or unplaced:
        data.racks.append(
            RackCell(
                UNASSIGNED,
                str(_("unassigned")),
                str(_("no rack")),
                without_rack,
                _mean(unplaced.get(UTIL)),
                _mean(unplaced.get(TEMPERATURE)),
                _ratio(unplaced.get(HBM_USED), unplaced.get(HBM_TOTAL)),
            )
        )
    health = CardAgg()
    for metrics in figures.racks.values():
        if HEALTH in metrics:
            health.add(metrics[HEALTH].cards, metrics[HEALTH].total, metrics[HEALTH].ones)
    counts = health_counts(health)
    if counts is not None:
        data.health = {
            **counts,
            "unknown": max(0, data.cards_total - counts["healthy"] - counts["unhealthy"]),
        }
    else:
        # No health telemetry: fall back to the inventory's last known health.
        counts = dict(
            Accelerator.objects.filter(node__cluster=cluster, parent__isnull=True)
            .values_list("health")
            .annotate(n=Count("pk"))
        )
        data.health = {
            "healthy": counts.get(1, 0),
            "unhealthy": counts.get(0, 0),
            "unknown": counts.get(-1, 0),
        }
    return data


@dataclass
class MemberRow:
    """One node of a rack, or one card of a node, with its newest values."""

    pk: int
    name: str
    cards: int
    values: dict[str, float | None]


def _card_values(cluster_id: int, card_entities: dict[int, int]) -> dict[int, dict[str, float]]:
    """Newest card values for ``{entity id: accelerator id}`` keyed by accelerator id."""
    values = cards_latest(cluster_id, card_entities, CARD_METRICS)
    return {acc: values.get(entity_id, {}) for entity_id, acc in card_entities.items()}


def rack_detail(rack: Rack) -> list[MemberRow]:
    """The rack's nodes with card count and mean newest card values."""
    cluster_id = rack.supernode.cluster_id
    nodes = sorted(Node.objects.filter(rack=rack), key=lambda n: natural_key(n.hostname))
    cards = dict(
        Entity.objects.filter(
            cluster_id=cluster_id, kind="accelerator", rack=rack, accelerator__isnull=False
        ).values_list("pk", "accelerator_id")
    )
    node_of = dict(Accelerator.objects.filter(node__rack=rack).values_list("pk", "node_id"))
    values = _card_values(cluster_id, cards)
    rows = []
    for node in nodes:
        members = [v for acc, v in values.items() if node_of.get(acc) == node.pk]
        means = {}
        for name in CARD_METRICS[:3]:
            found = [m[name] for m in members if name in m]
            means[name] = finite(float(np.mean(found))) if found else None
        count = sum(1 for n in node_of.values() if n == node.pk)
        rows.append(MemberRow(node.pk, node.hostname, count, means))
    return rows


def node_detail(node: Node) -> list[MemberRow]:
    """The node's cards with their newest values."""
    cards = dict(
        Entity.objects.filter(
            cluster_id=node.cluster_id, kind="accelerator", node=node, accelerator__isnull=False
        ).values_list("pk", "accelerator_id")
    )
    values = _card_values(node.cluster_id, cards)
    rows = []
    for acc in Accelerator.objects.filter(node=node).order_by("index", "pk"):
        latest = values.get(acc.pk, {})
        label = f"{node.hostname}/{acc.index if acc.index is not None else acc.vendor_id}"
        rows.append(MemberRow(acc.pk, label, 1, {n: latest.get(n) for n in CARD_METRICS}))
    return rows


def entity_series(
    entity: Entity | None, names: tuple[str, ...], tr: TimeRange
) -> dict[str, Points]:
    """Series of several metrics of one entity (a rack, node or card)."""
    metrics = metric_defs(names)
    points = series_points_many([metrics.get(name) for name in names], entity, tr)
    return {name: points.get(name, []) for name in names}


# A node's curves where no node-level series exists (exporters report cards only): the mean
# of its cards' utilization and the sum of their power, per plotted time.
NODE_FROM_CARDS = {
    "node_utilization_ratio": ("accelerator_utilization_ratio", "mean"),
    "node_power_watts": ("accelerator_power_watts", "sum"),
}


def node_series(node: Node, tr: TimeRange) -> tuple[dict[str, Points], str]:
    """``(curves, source)`` of a node's page: its own series, else derived from its cards
    (``"derived"``); one grouped read per card (a node has a handful)."""
    entity = Entity.objects.filter(kind="node", node=node).first()
    curves = entity_series(entity, tuple(NODE_FROM_CARDS), tr)
    if any(curves.values()):
        return curves, "twin"
    cards = Entity.objects.filter(kind="accelerator", node=node)
    metrics = metric_defs(card_metric for card_metric, _how in NODE_FROM_CARDS.values())
    per_time: dict[str, dict] = {name: {} for name in NODE_FROM_CARDS}
    for card in cards:
        points = series_points_many(list(metrics.values()), card, tr)
        for name, (card_metric, _how) in NODE_FROM_CARDS.items():
            for ts, value in points.get(card_metric, []):
                per_time[name].setdefault(ts, []).append(value)
    derived = {
        name: [
            (ts, sum(values) / len(values) if how == "mean" else sum(values))
            for ts, values in sorted(per_time[name].items())
        ]
        for name, (_card_metric, how) in NODE_FROM_CARDS.items()
    }
    return derived, "derived" if any(derived.values()) else ""
