"""The store's rack figures (``ReadBackend.rack_card_figures`` / ``cards_latest``): the cards'
newest frame values grouped by the rack each entity names."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from telemetry.models import Entity
from telemetry.read.fleet import HEALTH, CardAgg
from telemetry.read.local import latest as _latest
from telemetry.read.racks import ONE, SOURCE_STORE, RackCardFigures, RackFigures


def rack_card_figures(cluster_id: int, names: list[str]) -> RackCardFigures:
    """Per-rack sums and counts of ``names`` from every card's newest values; all cards are
    hotspot candidates."""
    snap = _latest.latest_kind(cluster_id, "accelerator", names)
    cards = Entity.objects.filter(cluster_id=cluster_id, kind="accelerator")
    card_rack = dict(cards.values_list("pk", "rack_id"))
    slices = set(cards.filter(accelerator__parent__isnull=False).values_list("pk", flat=True))
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


def cards_latest(
    cluster_id: int, entity_ids: Iterable[int], names: list[str]
) -> dict[int, dict[str, float]]:
    """``{entity id: {metric: newest value}}`` for a few cards of the cluster."""
    wanted = set(entity_ids)
    snap = _latest.latest_kind(cluster_id, "accelerator", names)
    return {pk: values for pk, values in snap.by_entity().items() if pk in wanted}
