"""The one place inventory rows (supernodes, racks, nodes, cards, links) are created.

Whoever discovers hardware calls these: the twin's topology import, exporters seen by
ingestion (``telemetry.ingest``), the PromQL data source, and inventory imports
(docs/architecture.md §1). Every function is keyword-only, bulk and idempotent: rows that
already exist are kept (``ignore_conflicts``), so a replayed push, a concurrent registration or
a re-run import creates each row once, and a fleet of 10,240 cards costs a few queries per
batch, never one per card.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Q, QuerySet

from inventory.models import (
    Accelerator,
    AcceleratorMove,
    Cluster,
    HardwareModel,
    Link,
    Node,
    Rack,
    Supernode,
    TopologyMapping,
)
from inventory.signals import nodes_placed

BATCH_SIZE = 2000


@dataclass(frozen=True, order=True)
class Placement:
    """Where a node stands: a rack inside a supernode (names, as operators and exporters
    spell them)."""

    supernode: str
    rack: str


@dataclass(frozen=True)
class DeviceSpec:
    """A card as its discoverer describes it; ``host`` names its node. A MIG slice names its
    GPU's ``vendor_id`` in ``parent_vendor_id`` (the GPU is created with it if missing)."""

    host: str
    index: int | None
    vendor_id: str
    model_name: str = ""
    hardware_model: HardwareModel | None = None
    health: int = Accelerator.Health.UNKNOWN
    parent_vendor_id: str | None = None
    mig_profile: str = ""
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None


@dataclass(frozen=True)
class LinkSpec:
    """A fabric link between two named endpoints."""

    key: str
    kind: str
    endpoint_a: str
    endpoint_b: str
    capacity_bytes_per_s: float


@transaction.atomic
def supernodes_ensure(*, cluster: Cluster, names: Iterable[str]) -> dict[str, Supernode]:
    """Create the supernodes of ``cluster`` that are missing; return all of them by name."""
    names = sorted(set(names))
    Supernode.objects.bulk_create(
        [Supernode(cluster=cluster, name=name) for name in names],
        ignore_conflicts=True,
        batch_size=BATCH_SIZE,
    )
    return {s.name: s for s in Supernode.objects.filter(cluster=cluster)}


@transaction.atomic
def racks_ensure(*, cluster: Cluster, placements: Iterable[Placement]) -> dict[Placement, Rack]:
    """Create the racks (and their supernodes) that are missing; return every rack of
    ``cluster`` by its placement."""
    placements = set(placements)
    supernodes = supernodes_ensure(cluster=cluster, names={p.supernode for p in placements})
    Rack.objects.bulk_create(
        [Rack(supernode=supernodes[p.supernode], name=p.rack) for p in sorted(placements)],
        ignore_conflicts=True,
        batch_size=BATCH_SIZE,
    )
    return {
        Placement(r.supernode.name, r.name): r
        for r in Rack.objects.filter(supernode__cluster=cluster).select_related("supernode")
    }


@transaction.atomic
def nodes_ensure(
    *,
    cluster: Cluster,
    hosts: Iterable[str],
    placements: Mapping[str, Placement] | None = None,
    labels: Mapping[str, Mapping[str, str]] | None = None,
    registered_by_exporter: bool = False,
) -> dict[str, Node]:
    """The nodes of ``cluster`` named by ``hosts``, created if missing, by hostname (with
    ``rack__supernode`` selected, so building entities costs no further query).

    ``placements`` (hostname → rack) are the discoverer's word — the twin's topology, an
    inventory import: new nodes are created in that rack and existing ones are moved there.
    Other hosts keep the rack they have; one without a rack is placed by the cluster's
    :class:`~inventory.models.TopologyMapping`, from its hostname and ``labels`` (hostname →
    the exporter labels its series carry), when the mapping says where.
    """
    placements = dict(placements or {})
    hosts = set(hosts) | set(placements)
    nodes = _nodes(cluster, hosts)
    unplaced = [h for h in hosts - placements.keys() if h not in nodes or not nodes[h].rack_id]
    if unplaced:
        placements.update(_mapped(cluster, unplaced, labels or {}))
    racks = racks_ensure(cluster=cluster, placements=placements.values()) if placements else {}
    missing = hosts - nodes.keys()
    if missing:
        Node.objects.bulk_create(
            [
                Node(
                    cluster=cluster,
                    hostname=host,
                    rack=racks[placements[host]] if host in placements else None,
                    registered_by_exporter=registered_by_exporter,
                )
                for host in sorted(missing)
            ],
            ignore_conflicts=True,
            batch_size=BATCH_SIZE,
        )
    moved = [
        node
        for host, node in nodes.items()
        if host in placements and node.rack_id != racks[placements[host]].pk
    ]
    for node in moved:
        node.rack = racks[placements[node.hostname]]
    if moved:
        # One UPDATE per rack: a rack holds many nodes, and Django's bulk_update builds a CASE
        # term per row (seconds for a fleet).
        nodes_update_grouped(nodes=moved, values=lambda n: {"rack": n.rack})
        nodes_placed.send(sender=Node, cluster=cluster, node_ids=[n.pk for n in moved])
    return _nodes(cluster, hosts) if missing or moved else nodes


@transaction.atomic
def accelerators_ensure(
    *, cluster: Cluster, devices: Iterable[DeviceSpec], nodes: Mapping[str, Node]
) -> dict[tuple[str, str], Accelerator]:
    """Create the cards in ``devices`` that are missing, on their nodes (from
    :func:`nodes_ensure`); return every card of those nodes by ``(hostname, vendor_id)``,
    with ``node__rack`` selected. A card already registered is kept as it is. GPUs are created
    before their MIG slices, which point at them (``parent``)."""
    found = _cards(cluster, nodes)
    # A fleet already registered (a restarted receiver's first push) costs one read, not a
    # bulk insert of every card that conflicts row by row.
    devices = [d for d in devices if (d.host, d.vendor_id) not in found]
    if not devices:
        return found
    reported = {d.vendor_id for d in devices}
    parents = {
        d.parent_vendor_id: DeviceSpec(d.host, d.index, d.parent_vendor_id, d.model_name)
        for d in devices
        if d.parent_vendor_id
        and d.parent_vendor_id not in reported
        and (d.host, d.parent_vendor_id) not in found
    }
    tops = [*parents.values(), *(d for d in devices if not d.parent_vendor_id)]
    Accelerator.objects.bulk_create(
        [_card(d, nodes, None) for d in tops], ignore_conflicts=True, batch_size=BATCH_SIZE
    )
    slices = [d for d in devices if d.parent_vendor_id]
    if slices:
        gpu_ids = {d.parent_vendor_id for d in slices}
        gpus = {
            a.vendor_id: a
            for a in Accelerator.objects.filter(
                node__cluster=cluster, vendor_id__in=list(gpu_ids), parent__isnull=True
            )
        }
        Accelerator.objects.bulk_create(
            [_card(d, nodes, gpus.get(d.parent_vendor_id)) for d in slices],
            ignore_conflicts=True,
            batch_size=BATCH_SIZE,
        )
    return _cards(cluster, nodes)


def _cards(cluster: Cluster, nodes: Mapping[str, Node]) -> dict[tuple[str, str], Accelerator]:
    """Every card of ``nodes`` by ``(hostname, vendor_id)``, each holding its node object from
    ``nodes`` (with its rack), so no join is read again."""
    by_id = {n.pk: n for n in nodes.values() if n.cluster_id == cluster.pk}
    node_ids = list(by_id)
    found: dict[tuple[str, str], Accelerator] = {}
    for start in range(0, len(node_ids), BATCH_SIZE):
        for card in Accelerator.objects.filter(node_id__in=node_ids[start : start + BATCH_SIZE]):
            card.node = by_id[card.node_id]
            found[(card.node.hostname, card.vendor_id)] = card
    return found


def _card(d: DeviceSpec, nodes: Mapping[str, Node], parent: Accelerator | None) -> Accelerator:
    return Accelerator(
        node=nodes[d.host],
        index=d.index,
        vendor_id=d.vendor_id,
        model_name=d.model_name[:100],
        # A card the discoverer cannot name takes the model the import gave its node.
        hardware_model_id=(
            d.hardware_model.pk if d.hardware_model else nodes[d.host].hardware_model_id
        ),
        health=d.health,
        parent=parent,
        mig_profile=d.mig_profile[:40],
        gpu_instance_id=d.gpu_instance_id,
        compute_instance_id=d.compute_instance_id,
    )


@transaction.atomic
def accelerators_move(
    *,
    cluster: Cluster,
    devices: Iterable[DeviceSpec],
    nodes: Mapping[str, Node],
    seen_at: datetime,
) -> list[Accelerator]:
    """Chips of ``cluster`` already known under another host than ``devices`` name are
    moved there — the card keeps its id and history — and an append-only
    ``AcceleratorMove`` row records each move. Call before :func:`accelerators_ensure`, so a
    moved chip is never registered twice. Returns the moved cards (on their new node)."""
    wanted = {d.vendor_id: d for d in devices}
    wanted.update(
        {d.parent_vendor_id: d for d in list(wanted.values()) if d.parent_vendor_id}
    )  # a slice's GPU moves with it
    if not wanted:
        return []
    known = Accelerator.objects.filter(
        node__cluster=cluster, vendor_id__in=list(wanted)
    ).select_related("node")
    moved = [card for card in known if card.node.hostname != wanted[card.vendor_id].host]
    if not moved:
        return []
    moves = []
    for card in moved:
        target = nodes[wanted[card.vendor_id].host]
        moves.append(
            AcceleratorMove(
                accelerator=card,
                from_node=card.node,
                to_node=target,
                from_hostname=card.node.hostname,
                to_hostname=target.hostname,
                seen_at=seen_at,
            )
        )
        card.node = target
    AcceleratorMove.objects.bulk_create(moves, batch_size=BATCH_SIZE)
    Accelerator.objects.bulk_update(moved, ["node"], batch_size=BATCH_SIZE)
    return moved


def accelerators_seen(*, ids: Iterable[int] | QuerySet, seen_at: datetime) -> int:
    """Mark cards seen at ``seen_at``: one update per batch (``ids`` may be a subquery),
    touching only rows whose ``last_seen`` is older (a resent or late batch writes nothing)."""
    if not isinstance(ids, QuerySet):
        ids = sorted(ids)
        if not ids:
            return 0
        if connection.vendor == "postgresql":
            return _accelerators_seen_postgresql(ids, seen_at)
    return (
        Accelerator.objects.filter(id__in=ids)
        .filter(Q(last_seen__isnull=True) | Q(last_seen__lt=seen_at))
        .update(last_seen=seen_at)
    )


def _accelerators_seen_postgresql(ids: list[int], seen_at: datetime) -> int:
    # Concurrent ingestion requests (Prometheus' shards) mark overlapping sets of cards seen
    # inside their own transactions: a row another one is updating right now is skipped
    # (it is being marked seen at about the same time) instead of waited for, so batches
    # never queue, nor deadlock, on the inventory.
    table = connection.ops.quote_name(Accelerator._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS a SET last_seen = %s FROM ("
            f"  SELECT id FROM {table} WHERE id = ANY(%s)"
            "   AND (last_seen IS NULL OR last_seen < %s)"
            "   ORDER BY id FOR UPDATE SKIP LOCKED"
            ") AS due WHERE a.id = due.id",
            [seen_at, ids, seen_at],
        )
        return cursor.rowcount


@transaction.atomic
def links_ensure(*, cluster: Cluster, links: Iterable[LinkSpec]) -> dict[str, Link]:
    """Create the links of ``cluster`` that are missing; return all of them by key."""
    Link.objects.bulk_create(
        [
            Link(
                cluster=cluster,
                key=link.key,
                kind=link.kind,
                endpoint_a=link.endpoint_a,
                endpoint_b=link.endpoint_b,
                capacity_bytes_per_s=link.capacity_bytes_per_s,
            )
            for link in links
        ],
        ignore_conflicts=True,
        batch_size=BATCH_SIZE,
    )
    return {link.key: link for link in Link.objects.filter(cluster=cluster)}


def _mapped(
    cluster: Cluster, hosts: Iterable[str], labels: Mapping[str, Mapping[str, str]]
) -> dict[str, Placement]:
    mapping = TopologyMapping.objects.filter(cluster=cluster).first()
    if mapping is None:
        return {}
    found = {}
    for host in hosts:
        place = mapping.place(host, dict(labels.get(host) or {}))
        if place is not None:
            found[host] = Placement(*place)
    return found


def nodes_update_grouped(*, nodes: list[Node], values: Callable[[Node], dict]) -> None:
    """Write ``values(node)`` (a dict of fields) with one UPDATE per distinct value set."""
    groups: dict[tuple, tuple[dict, list[int]]] = {}
    for node in nodes:
        fields = values(node)
        key = tuple((k, getattr(v, "pk", v)) for k, v in sorted(fields.items()))
        groups.setdefault(key, (fields, []))[1].append(node.pk)
    for fields, ids in groups.values():
        for start in range(0, len(ids), BATCH_SIZE):
            Node.objects.filter(pk__in=ids[start : start + BATCH_SIZE]).update(**fields)


def _nodes(cluster: Cluster, hosts: set[str]) -> dict[str, Node]:
    found: dict[str, Node] = {}
    ordered = sorted(hosts)
    for start in range(0, len(ordered), BATCH_SIZE):
        rows = Node.objects.filter(
            cluster=cluster, hostname__in=ordered[start : start + BATCH_SIZE]
        ).select_related("rack__supernode")
        found.update({n.hostname: n for n in rows})
    return found


@transaction.atomic
def topology_mapping_apply(*, cluster: Cluster, previous: TopologyMapping | None = None) -> int:
    """Apply the cluster's topology mapping's hostname pattern to its existing nodes at once;
    returns how many nodes it put in a (different) rack. Called when an operator saves a
    mapping, so known nodes need not wait for their next push.

    A node without a rack is placed. A node an exporter registered that ``previous`` (the
    mapping as it was before this save) placed by its pattern follows the new pattern: an
    operator correcting a pattern moves what the old one put. Any other node in a rack — put
    there by an inventory import, the twin or a rack label — stays (an import moves nodes). A
    rack label cannot be applied here: labels are only known when the node's series arrive.
    """
    mapping = TopologyMapping.objects.filter(cluster=cluster).first()
    if mapping is None or not mapping.hostname_pattern:
        return 0
    nodes = list(Node.objects.filter(cluster=cluster).select_related("rack__supernode"))
    before = {n.hostname: n.rack_id for n in nodes}
    unplaced: set[str] = set()
    placements: dict[str, Placement] = {}
    follow = previous is not None and bool(previous.hostname_pattern)
    for node in nodes:
        if node.rack_id is None:
            unplaced.add(node.hostname)
        elif follow and node.registered_by_exporter:
            old = previous.place(node.hostname)  # the pattern alone (no labels here)
            if old == (node.rack.supernode.name, node.rack.name):
                new = mapping.place(node.hostname)
                if new is not None and new != old:
                    placements[node.hostname] = Placement(*new)
    if not unplaced and not placements:
        return 0
    found = nodes_ensure(cluster=cluster, hosts=unplaced, placements=placements)
    return sum(1 for host, n in found.items() if n.rack_id and n.rack_id != before.get(host))
