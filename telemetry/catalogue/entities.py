"""The one place that creates telemetry entities from inventory rows.

An entity carries its topology path (supernode, rack, node) and, for workloads, its tenant:
selectors group by rack or supernode and scope by tenant without walking the inventory. That
denormalisation used to be written out in four places (the twin's seeding, exporter node and
card registration, JSON ingestion of workload samples); it lives here now, so a new kind or a
new path field changes one function.
"""

from __future__ import annotations

from collections.abc import Iterable

from inventory.models import Accelerator, Cluster, Link, Node, Rack, Supernode, Workload
from telemetry.models import Entity, EntityKind


def entity_build(
    *,
    cluster: Cluster,
    kind: str,
    key: str,
    supernode: Supernode | None = None,
    rack: Rack | None = None,
    node: Node | None = None,
    accelerator: Accelerator | None = None,
    link: Link | None = None,
    workload: Workload | None = None,
) -> Entity:
    """An unsaved entity with its path filled in from the most specific inventory row given.

    A card implies its node, a node its rack, a rack its supernode; a workload implies its
    tenant. Callers pass ``select_related`` rows so building a fleet costs no extra query.
    """
    if accelerator is not None and node is None:
        node = accelerator.node
    if node is not None and rack is None:
        rack = node.rack
    entity = Entity(
        cluster=cluster,
        kind=kind,
        key=key,
        accelerator=accelerator,
        node=node,
        rack=rack,
        link=link,
        workload=workload,
    )
    if supernode is not None:
        entity.supernode = supernode
    elif rack is not None:
        entity.supernode_id = rack.supernode_id
    if workload is not None:
        entity.tenant_id = workload.tenant_id
    return entity


def entities_save(entities: Iterable[Entity], *, batch_size: int = 2000) -> None:
    """Insert entities; ones already registered (same cluster, kind and key) are kept as they
    are, so concurrent registrations and replays create each entity once."""
    Entity.objects.bulk_create(list(entities), ignore_conflicts=True, batch_size=batch_size)


def entities_path_sync(*, cluster: Cluster, node_ids: Iterable[int]) -> int:
    """Give the entities of moved nodes (the node's own and its cards') the node's new rack
    and supernode; returns how many entities changed. Connected to
    ``inventory.signals.nodes_placed``: an entity's path is a copy of the inventory's."""
    by_rack: dict[int | None, list[int]] = {}
    supernode_of: dict[int | None, int | None] = {None: None}
    for node_id, rack_id, supernode_id in Node.objects.filter(
        cluster=cluster, pk__in=list(node_ids)
    ).values_list("pk", "rack_id", "rack__supernode_id"):
        by_rack.setdefault(rack_id, []).append(node_id)
        supernode_of[rack_id] = supernode_id
    changed = 0
    for rack_id, ids in by_rack.items():
        changed += Entity.objects.filter(cluster=cluster, node_id__in=ids).update(
            rack_id=rack_id, supernode_id=supernode_of[rack_id]
        )
    return changed


def entities_on_nodes_placed(*, cluster: Cluster, node_ids: list[int], **_: object) -> None:
    entities_path_sync(cluster=cluster, node_ids=node_ids)


def workload_entity_ensure(workload: Workload) -> Entity:
    """The workload's entity, created with its workload and tenant links if missing."""
    built = entity_build(
        cluster=workload.cluster, kind=EntityKind.WORKLOAD, key=workload.name, workload=workload
    )
    entity, _ = Entity.objects.get_or_create(
        cluster=workload.cluster,
        kind=EntityKind.WORKLOAD,
        key=workload.name,
        defaults={"workload": workload, "tenant_id": built.tenant_id},
    )
    return entity
