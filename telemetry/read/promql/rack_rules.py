"""Rack heatmaps from per-rack recording rules: the portal's node placement joined on the server
(issue 33 §3: "heatmaps at rack level", ≤ 1 s at 100k cards).

Exporters know hosts, not racks: the portal's inventory does. Per-host answers grow with the
nodes (12,800 series per figure at 102,400 cards, 141,000 for a hardware page), so the portal
publishes its placement as an info metric, :data:`NODE_RACK_INFO` (``/metrics/topology``, one
series per placed node, value 1, labels :data:`HOST_KEY` and :data:`RACK_KEY`) — the pattern
kube-state-metrics' ``kube_node_labels`` uses — and the shipped rules join it on the host:
``cluster_portal:<metric>:<aggregate>_by_rack`` is the per-host record's expression summed per
rack, hosts the placement does not name summed under ``portal_rack="none"``. A page then
reads one series per rack.

The join is the server's: the placement is the one it scraped last (a node moved between racks
shows under its new rack from the next scrape and evaluation), and a host is matched by the
first host label it carries of ``HOST_LABELS`` (as the per-host figures file it). Where the
rack records are missing or name no placed rack while the inventory places nodes (the rules
predate these, or ``/metrics/topology`` is not scraped), the page reads the per-host records
and places hosts itself, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from datetime import datetime

from inventory.models import Node
from telemetry.read.fleet import CardAgg
from telemetry.read.promql.fleet import Grid, _groups, fold_recorded
from telemetry.read.promql.reads import _Reader

#: The portal's placement of a node in a rack, as ``/metrics/topology`` serves it.
NODE_RACK_INFO = "cluster_portal_node_rack"
HOST_KEY = "portal_host"  # the node's hostname as the inventory knows it
RACK_KEY = "portal_rack"  # the rack's id in the portal
UNPLACED = "none"  # RACK_KEY of the hosts the placement does not name
BY_RACK = "_by_rack"


def by_rack(per_host: str, host_labels: Iterable[str]) -> str:
    """``per_host`` (an expression grouped by ``host_labels``) summed per rack of the portal's
    placement, the hosts it does not place summed under :data:`UNPLACED`."""
    hosted = per_host
    # The first host label present names the host: applied last, it wins.
    for label in reversed(tuple(host_labels)):
        hosted = f'label_replace({hosted}, "{HOST_KEY}", "$1", "{label}", "(.+)")'
    placement = f"max by ({HOST_KEY}, {RACK_KEY}) ({NODE_RACK_INFO})"
    placed = f"{hosted} * on ({HOST_KEY}) group_left ({RACK_KEY}) {placement}"
    unplaced = (
        f'label_replace({hosted} unless on ({HOST_KEY}) {placement}, "{RACK_KEY}", '
        f'"{UNPLACED}", "", "")'
    )
    return f"sum by ({RACK_KEY}) (({placed}) or ({unplaced}))"


def _rack_of(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None  # UNPLACED, or a value the portal did not write


def rack_grid(
    reader: _Reader, *, at: datetime, host_labels: tuple[str, ...], cluster_id: int
) -> Grid:
    """Answers at one instant filed by rack: by :data:`RACK_KEY` where the server joined the
    placement, else (the sparse failing chips, cards without a chip label) by the rack the
    inventory gives their host, read once when first needed."""
    placement: dict[str, int | None] | None = None

    def rack_of_host(host: str | None) -> int | None:
        nonlocal placement
        if host is None:
            return None
        if placement is None:
            placement = dict(
                Node.objects.filter(cluster_id=cluster_id).values_list("hostname", "rack_id")
            )
        return placement.get(host)

    def key(labels: dict[str, str], _ts: float) -> Hashable:
        rack = labels.get(RACK_KEY)
        if rack is not None:
            return _rack_of(rack)
        return rack_of_host(next((labels[n] for n in host_labels if labels.get(n)), None))

    return Grid(
        ask=lambda expr: reader._run(lambda: reader.client.query(expr, at=at)),
        key=key,
        sample_key=lambda sample: rack_of_host(sample.entity.host),
    )


def recorded_rack_figures(
    reader: _Reader,
    *,
    names: Iterable[str],
    grid: Grid,
    placed_nodes: Callable[[], bool],
) -> dict[str, dict[Hashable, CardAgg]]:
    """``{metric: {rack id (None: not placed): CardAgg}}`` of the ``names`` the server's
    rack records answer; a metric left out is read per host by the caller. A record that
    places nothing while the inventory places nodes (``placed_nodes``) is not the
    placement's answer (the info metric is not scraped): left out too."""
    out: dict[str, dict[Hashable, CardAgg]] = {}
    for name in names:
        groups = _groups(name)
        if not groups:
            continue
        folded = fold_recorded(reader, name, groups, grid, suffix=BY_RACK)
        if folded is None:
            continue
        if set(folded) <= {None} and placed_nodes():
            continue
        out[name] = folded
    return out
