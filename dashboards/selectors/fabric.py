"""Fabric graph of one supernode: its racks and switch endpoints as nodes, its links as edges,
with each link's newest state and load, laid out deterministically (pure Python, no layout
library: racks on a circle, the supernode's own switches inside it, endpoints outside the
supernode on an outer ring).

A link's state comes from its newest telemetry when it has some (``link_status``,
``link_rerouting_status``, ``link_utilization_ratio``: the twin's model, or an exporter), else
from the inventory row — the same rule as the network page's link table
(:mod:`dashboards.selectors.network`).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from cluster_portal.web.rows import plain_rows
from dashboards.selectors.common import latest_snapshot
from dashboards.selectors.network import LINK_METRICS
from inventory.models import Cluster, Link, Rack, Supernode

RACK_RADIUS = 1.0
SWITCH_RADIUS = 0.4
OUTER_RADIUS = 1.7
CURVE_POINTS = 7  # samples per drawn edge: enough for a smooth fan, and hover along the edge
# Parallel links (same two endpoints: a rack's uplinks) fan out by this share of their length
# per link, so a down uplink is not hidden under its seven live siblings.
FAN_STEP = 0.035
LOOP_RADIUS = 0.07  # in-rack links (both ends inside one rack) are loops outside the rack
NOT_UP = ("down", "degraded")


@dataclass
class FabricNode:
    """One drawn endpoint: a rack of the supernode, one of its switches, or an outside end."""

    key: str
    role: str  # "rack", "switch" or "external"
    x: float
    y: float
    rack_id: int | None = None
    links: int = 0
    not_up: int = 0


@dataclass
class FabricEdge:
    """One link as drawn: its inventory facts, its newest state and the curve's points."""

    key: str
    kind: str
    status: str  # "up", "degraded" or "down"
    rerouting: bool  # traffic is being moved off this (failed) link: self-healing under way
    endpoint_a: str
    endpoint_b: str
    capacity_bytes_per_s: float
    utilization: float | None
    xs: list[float] = field(default_factory=list)
    ys: list[float] = field(default_factory=list)
    # Links between the same two ends that are not up: with ECMP their traffic moved here.
    parallel_not_up: int = 0


@dataclass
class SupernodeChoice:
    """A supernode offered by the picker, with how many of its links are not up."""

    pk: int
    name: str
    links: int
    not_up: int


@dataclass
class FabricGraph:
    """The picked supernode's graph, the picker's choices and what the telemetry records."""

    cluster: Cluster
    supernode: Supernode | None
    choices: list[SupernodeChoice] = field(default_factory=list)
    nodes: list[FabricNode] = field(default_factory=list)
    edges: list[FabricEdge] = field(default_factory=list)
    status_counts: dict[str, int] = field(default_factory=dict)
    rerouting_recorded: bool = False  # some link of the cluster reports link_rerouting_status
    utilization_measured: bool = False  # some drawn link reports its utilization


class UnknownSupernode(LookupError):
    """The picked supernode is not one of the cluster's."""


def _sick(link: _Link | FabricEdge) -> bool:
    """Not up: down, degraded, or rerouting (the network page's unhealthy links)."""
    return link.status in NOT_UP or link.rerouting


def natural_key(name: str) -> tuple:
    """``r2`` before ``r10``: digits compare as numbers."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


@dataclass
class _Link:
    key: str
    kind: str
    status: str
    rerouting: bool
    endpoint_a: str
    endpoint_b: str
    capacity: float
    utilization: float | None
    entity_rack: int | None


class _Racks:
    """Resolves an endpoint name to a rack: the rack itself (``sn0/r3``, or ``sn0/r3`` spelt
    supernode/rack), or something inside it (``sn0/r3/n10/c5``). A rack name two supernodes
    share is ambiguous and resolves to none."""

    def __init__(self, racks: list[tuple[int, str, int, str]]) -> None:
        self.supernode_of = {pk: sn for pk, _, sn, _ in racks}
        self.name_of = {pk: name for pk, name, _, _ in racks}
        names: dict[str, set[int]] = defaultdict(set)
        for pk, name, _, sn_name in racks:
            names[name].add(pk)
            names[f"{sn_name}/{name}"].add(pk)
        self.by_name = {name: next(iter(pks)) for name, pks in names.items() if len(pks) == 1}

    def resolve(self, endpoint: str) -> int | None:
        parts = endpoint.split("/")
        for end in range(len(parts), 0, -1):
            pk = self.by_name.get("/".join(parts[:end]))
            if pk is not None:
                return pk
        return None


def _links(cluster: Cluster) -> tuple[list[_Link], bool]:
    """Every link of ``cluster`` with its effective state (two queries plus the snapshot)."""
    rows = plain_rows(
        Link.objects.filter(cluster=cluster)
        .order_by()
        .values_list(
            "entity__pk",
            "key",
            "kind",
            "status",
            "endpoint_a",
            "endpoint_b",
            "capacity_bytes_per_s",
            "entity__rack_id",
        )
    )
    snap = latest_snapshot(cluster.pk, "link", LINK_METRICS)
    at = snap.positions(np.array([r[0] if r[0] is not None else -1 for r in rows], np.int64))
    status, util, rerouting = (snap.get(n) for n in LINK_METRICS)
    recorded = bool(np.isfinite(rerouting).any()) if rerouting.size else False

    def value(values: np.ndarray, i: int) -> float | None:
        v = float(values[at[i]]) if at[i] >= 0 else math.nan
        return v if math.isfinite(v) else None

    out = []
    for i, (_, key, kind, state, a, b, capacity, rack) in enumerate(rows):
        measured, reroute = value(status, i), value(rerouting, i)
        if measured is not None:
            # Telemetry says up (1) or down (0) and wins, as in the network page's table;
            # "degraded" is the inventory's word for a link without telemetry.
            state = "down" if measured == 0 else "up"
        out.append(_Link(key, kind, state, reroute == 1, a, b, capacity, value(util, i), rack))
    return out, recorded


def _supernodes_of(link: _Link, racks: _Racks, names: dict[str, int]) -> set[int]:
    """The supernodes a link belongs to: its ends' racks', its entity rack's, and any whose
    name prefixes an end (``sn0/spine``). An inter-supernode link belongs to both."""
    found = set()
    if link.entity_rack is not None and link.entity_rack in racks.supernode_of:
        found.add(racks.supernode_of[link.entity_rack])
    for end in (link.endpoint_a, link.endpoint_b):
        rack = racks.resolve(end)
        if rack is not None:
            found.add(racks.supernode_of[rack])
        head = end.split("/", 1)[0]
        if "/" in end and head in names:
            found.add(names[head])
    return found


def _ring(keys: list[str], radius: float, turn: float = 0.0) -> dict[str, tuple[float, float]]:
    """``keys`` evenly on a circle, the first at the top turned ``turn`` clockwise; one key
    alone sits at the centre when ``radius`` is the switches' (a single spine is the hub)."""
    if len(keys) == 1 and radius == SWITCH_RADIUS:
        return {keys[0]: (0.0, 0.0)}
    out = {}
    for i, key in enumerate(keys):
        angle = math.pi / 2 - turn - 2 * math.pi * i / max(len(keys), 1)
        out[key] = (round(radius * math.cos(angle), 4), round(radius * math.sin(angle), 4))
    return out


def _curve(a: tuple[float, float], b: tuple[float, float], offset: float) -> tuple[list, list]:
    """A quadratic Bézier from ``a`` to ``b`` bowed sideways by ``offset`` of its length (a
    straight line for 0); when ``a`` is ``b``, a loop of growing size outside the node."""
    (x0, y0), (x1, y1) = a, b
    if a == b:
        r = LOOP_RADIUS * (1 + abs(offset) / FAN_STEP / 2)
        # Outward and a little clockwise of the rack, clear of the rack's label (outward).
        side = math.atan2(y0, x0) - math.pi / 3 if (x0, y0) != (0.0, 0.0) else 0.0
        cx, cy = x0 + r * math.cos(side), y0 + r * math.sin(side)
        start = math.atan2(y0 - cy, x0 - cx)
        steps = [start + 2 * math.pi * k / (CURVE_POINTS * 2 - 1) for k in range(CURVE_POINTS * 2)]
        return (
            [round(cx + r * math.cos(t), 4) for t in steps],
            [round(cy + r * math.sin(t), 4) for t in steps],
        )
    dx, dy = x1 - x0, y1 - y0
    # Control point: the midpoint pushed along the normal (twice the bow: a quadratic curve
    # reaches half its control point's offset).
    cx, cy = (x0 + x1) / 2 - 2 * offset * dy, (y0 + y1) / 2 + 2 * offset * dx
    xs, ys = [], []
    for k in range(CURVE_POINTS):
        t = k / (CURVE_POINTS - 1)
        xs.append(round((1 - t) ** 2 * x0 + 2 * (1 - t) * t * cx + t**2 * x1, 4))
        ys.append(round((1 - t) ** 2 * y0 + 2 * (1 - t) * t * cy + t**2 * y1, 4))
    return xs, ys


def fabric_graph(cluster: Cluster, supernode: str | None = None) -> FabricGraph:
    """The fabric graph of the supernode named ``supernode`` (default: the one with the most
    links not up, ties to the first by name, so the first view shows a problem if there is one).

    Raises :class:`UnknownSupernode` for a supernode that is not the cluster's."""
    supernodes = list(
        Supernode.objects.filter(cluster=cluster).order_by().values_list("pk", "name")
    )
    supernodes.sort(key=lambda s: natural_key(s[1]))
    racks = _Racks(
        plain_rows(
            Rack.objects.filter(supernode__cluster=cluster)
            .order_by()
            .values_list("pk", "name", "supernode_id", "supernode__name")
        )
    )
    links, recorded = _links(cluster)
    names = {name: pk for pk, name in supernodes}
    members: dict[int, list[_Link]] = defaultdict(list)
    for link in links:
        for sn in _supernodes_of(link, racks, names):
            members[sn].append(link)
    choices = [
        SupernodeChoice(pk, name, len(members[pk]), sum(_sick(link) for link in members[pk]))
        for pk, name in supernodes
    ]
    graph = FabricGraph(cluster=cluster, supernode=None, choices=choices)
    graph.rerouting_recorded = recorded
    if supernode is None:
        if not choices:
            return graph
        supernode_pk = max(choices, key=lambda c: c.not_up).pk  # max keeps the first of ties
    elif supernode in names:
        supernode_pk = names[supernode]
    else:
        raise UnknownSupernode(supernode)
    graph.supernode = Supernode.objects.get(pk=supernode_pk)
    _draw(graph, supernode_pk, members[supernode_pk], racks, names)
    return graph


def _draw(
    graph: FabricGraph, sn: int, links: list[_Link], racks: _Racks, names: dict[str, int]
) -> None:
    own = graph.supernode.name + "/"
    others = {name + "/" for name in names if name + "/" != own}

    def node_of(end: str, kind: str) -> tuple[str, str, int | None]:
        rack = racks.resolve(end)
        if rack is not None and racks.supernode_of[rack] == sn:
            return racks.name_of[rack], "rack", rack
        outside = rack is not None or any(end.startswith(o) for o in others)
        if end.startswith(own) or not (outside or kind == Link.Kind.INTER_SUPERNODE):
            return end, "switch", None
        return end, "external", None

    # Every rack of the supernode is drawn, linked or not (a rack without links is news too).
    found: dict[str, tuple[str, int | None]] = {
        racks.name_of[pk]: ("rack", pk) for pk, s in racks.supernode_of.items() if s == sn
    }
    ends = []
    for link in sorted(links, key=lambda lk: natural_key(lk.key)):
        a, role_a, rack_a = node_of(link.endpoint_a, link.kind)
        b, role_b, rack_b = node_of(link.endpoint_b, link.kind)
        found.setdefault(a, (role_a, rack_a))
        found.setdefault(b, (role_b, rack_b))
        ends.append((link, a, b))
    place: dict[str, tuple[float, float]] = {}
    by_role = {
        role: sorted((k for k, (r, _) in found.items() if r == role), key=natural_key)
        for role in ("rack", "switch", "external")
    }
    place.update(_ring(by_role["rack"], RACK_RADIUS))
    place.update(_ring(by_role["switch"], SWITCH_RADIUS))
    # Outside ends sit between two racks, so a line from the centre to one crosses no rack.
    half_step = math.pi / len(by_role["rack"]) if by_role["rack"] else 0.0
    place.update(_ring(by_role["external"], OUTER_RADIUS, half_step))
    nodes = {
        key: FabricNode(key, role, *place[key], rack_id=rack) for key, (role, rack) in found.items()
    }
    groups: dict[tuple[str, str], list[tuple[_Link, str, str]]] = defaultdict(list)
    for link, a, b in ends:
        groups[(a, b) if natural_key(a) <= natural_key(b) else (b, a)].append((link, a, b))
    for (a, b), group in groups.items():
        sick = sum(_sick(link) for link, _, _ in group)
        for i, (link, _, _) in enumerate(group):
            offset = FAN_STEP * (i - (len(group) - 1) / 2)
            if a == b:
                offset = FAN_STEP * i  # loops grow outward instead
            xs, ys = _curve(place[a], place[b], offset)
            graph.edges.append(
                FabricEdge(
                    key=link.key,
                    kind=link.kind,
                    status=link.status,
                    rerouting=link.rerouting,
                    endpoint_a=link.endpoint_a,
                    endpoint_b=link.endpoint_b,
                    capacity_bytes_per_s=link.capacity,
                    utilization=link.utilization,
                    xs=xs,
                    ys=ys,
                    parallel_not_up=0 if _sick(link) else sick,
                )
            )
            for end in {a, b}:
                nodes[end].links += 1
                nodes[end].not_up += _sick(link)
    graph.nodes = sorted(nodes.values(), key=lambda n: (n.role, natural_key(n.key)))
    graph.edges.sort(key=lambda e: natural_key(e.key))
    graph.status_counts = dict(Counter(e.status for e in graph.edges))
    rerouting = sum(e.rerouting for e in graph.edges)
    if rerouting:
        graph.status_counts["rerouting"] = rerouting  # on top of their up/down state
    graph.utilization_measured = any(e.utilization is not None for e in graph.edges)
