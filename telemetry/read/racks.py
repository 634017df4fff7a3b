"""The newest card figures per rack, for rack heatmaps and hotspot tables, from either
backend (issue 33 §3: heatmaps at rack level, never one series per card from a PromQL server).

The shapes both backends answer (``ReadBackend.rack_card_figures`` / ``cards_latest``). The
local store reads every card's newest values (one snapshot, cheap in-process) and groups them
by the rack its entity names (``telemetry.read.local.racks``). A PromQL server is asked for
per-host sums and counts (``telemetry.read.promql.hosts``) and hosts are placed in racks by the
inventory; its hotspot candidates are the server's top-N and failing chips, read for those
chips only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from telemetry.read.fleet import CardAgg
from telemetry.read.local.latest import KindSnapshot

#: A value counts as "one" (healthy) from here, as in the fleet folds.
ONE = 0.999999
SOURCE_STORE = "store"
SOURCE_PROMQL = "promql"
#: Read from the per-rack recording rules (the server joined the portal's node placement).
SOURCE_PROMQL_RULES_RACKS = "promql-rules-racks"

# {rack id (None: no rack places the card): {card metric: CardAgg}}
RackFigures = dict[int | None, dict[str, CardAgg]]


@dataclass
class RackCardFigures:
    """The newest card figures of one cluster for its rack heatmaps and hotspot tables.

    ``racks``: per rack each card metric's count of cards with a value, their sum and how many
    were 1; health counts a MIG GPU once (its slices take its health). ``hot``: the cards a
    hotspot table may show, with every metric asked — the whole fleet on the local store, the
    server's top-N and failing chips on a PromQL source. ``source`` says which (``store``,
    ``promql``, ``promql-rules`` for per-host records, ``promql-rules-racks`` for per-rack
    ones), for the page's note."""

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
