"""The newest card figures per rack, for rack heatmaps and hotspot tables, from either
backend (issue 33 §3: heatmaps at rack level, never one series per card from a PromQL server).

The local store reads every card's newest values (one snapshot, cheap in-process) and groups
them by the rack its entity names. A PromQL server is asked for per-host sums and counts
(``telemetry.read.promql.hosts``) and hosts are placed in racks by the inventory; its hotspot
candidates are the server's top-N and failing chips, read for those chips only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from inventory.models import Cluster, Node
from telemetry.models import Entity
from telemetry.read.fleet import HEALTH, CardAgg
from telemetry.read.local import latest as _latest
from telemetry.read.local.latest import KindSnapshot
from telemetry.read.promql import hosts as _hosts
from telemetry.read.promql import reads as promql

#: A value counts as "one" (healthy) from here, as in the fleet folds.
ONE = 0.999999
SOURCE_STORE = "store"
SOURCE_PROMQL = "promql"

# {rack id (None: no rack places the card): {card metric: CardAgg}}
RackFigures = dict[int | None, dict[str, CardAgg]]


@dataclass
class RackCardFigures:
    """The newest card figures of one cluster for its rack heatmaps and hotspot tables.

    ``racks``: per rack each card metric's count of cards with a value, their sum and how many
    were 1; health counts a MIG GPU once (its slices take its health). ``hot``: the cards a
    hotspot table may show, with every metric asked — the whole fleet on the local store, the
    server's top-N and failing chips on a PromQL source. ``source`` says which (``store`` or
    ``promql``), for the page's note."""

    ts: datetime | None
    racks: RackFigures
    hot: KindSnapshot
    source: str


def health_counts(agg: CardAgg | None) -> dict[str, int] | None:
    """``healthy`` / ``unhealthy`` / ``reported unknown`` cards from a health ``CardAgg``
    (values 1, 0 and -1: the sum is ones less the unknowns)."""
    if agg is None or not agg.cards:
        return None
    unknown = max(0, int(round(agg.ones - agg.total)))
    return {"healthy": agg.ones, "unhealthy": max(0, agg.cards - agg.ones - unknown)}


def _local(cluster: Cluster, names: list[str]) -> RackCardFigures:
    snap = _latest.latest_kind(cluster.pk, "accelerator", names)
    card_rack = dict(
        Entity.objects.filter(cluster=cluster, kind="accelerator").values_list("pk", "rack_id")
    )
    slices = set(
        Entity.objects.filter(
            cluster=cluster, kind="accelerator", accelerator__parent__isnull=False
        ).values_list("pk", flat=True)
    )
    racks_of = np.array([card_rack.get(e) or -1 for e in snap.ids.tolist()], dtype=np.int64)
    is_slice = np.isin(snap.ids, list(slices)) if slices else np.zeros(snap.ids.size, bool)
    out: RackFigures = {}
    for name in names:
        values = snap.get(name)
        present = np.isfinite(values)
        if name == HEALTH:  # a GPU already takes its slices' worst health: count GPUs only
            present &= ~is_slice
        for rack in np.unique(racks_of[present]).tolist():
            chosen = present & (racks_of == rack)
            picked = values[chosen]
            agg = CardAgg(int(chosen.sum()), float(picked.sum()), int((picked >= ONE).sum()))
            out.setdefault(None if rack == -1 else rack, {})[name] = agg
    return RackCardFigures(ts=snap.ts, racks=out, hot=snap, source=SOURCE_STORE)


def _remote(source, cluster: Cluster, names: list[str], hot_n: int) -> RackCardFigures:
    at = datetime.now(tz=UTC)
    per_host = _hosts.host_figures(source, names=names, at=at)
    rack_of_host = dict(Node.objects.filter(cluster=cluster).values_list("hostname", "rack_id"))
    out: RackFigures = {}
    for host, metrics in per_host.items():
        rack = rack_of_host.get(host) if host is not None else None
        for name, agg in metrics.items():
            out.setdefault(rack, {}).setdefault(name, CardAgg()).add(agg.cards, agg.total, agg.ones)
    chips = _hosts.hot_chip_ids(source, n=hot_n, at=at)
    hot = _hosts.chips_snapshot(source, chip_ids=chips, names=names, at=at)
    return RackCardFigures(ts=at if out else None, racks=out, hot=hot, source=SOURCE_PROMQL)


def rack_card_figures(cluster: Cluster, names: Iterable[str], *, hot_n: int) -> RackCardFigures:
    """Per-rack sums and counts of ``names`` (card metrics) and the hotspot candidates."""
    names = list(dict.fromkeys(names))
    source = promql.source_for(cluster.pk)
    if source is None:
        return _local(cluster, names)
    return _remote(source, cluster, names, hot_n)


def cards_latest(
    cluster_id: int, entity_ids: Iterable[int], names: Iterable[str]
) -> dict[int, dict[str, float]]:
    """``{entity id: {metric: newest value}}`` for a few cards (a rack's or a node's): a
    PromQL source is asked for those chips only, by their chip label (cards that an exporter
    names by index and host, with no chip label, are not found there and show no values)."""
    wanted, names = set(entity_ids), list(dict.fromkeys(names))
    source = promql.source_for(cluster_id)
    if source is None:
        snap = _latest.latest_kind(cluster_id, "accelerator", names)
    else:
        vendor_ids = Entity.objects.filter(
            cluster_id=cluster_id, pk__in=wanted, accelerator__isnull=False
        ).values_list("accelerator__vendor_id", flat=True)
        # A MIG slice's vendor id is its GPU's UUID and its instance: the chip label is the UUID.
        chips = {vendor.split("/", 1)[0] for vendor in vendor_ids if vendor}
        chip_ids = dict.fromkeys(_hosts.CHIP_LABELS, chips)
        at = datetime.now(tz=UTC)
        snap = _hosts.chips_snapshot(source, chip_ids=chip_ids, names=names, at=at)
    return {pk: values for pk, values in snap.by_entity().items() if pk in wanted}
