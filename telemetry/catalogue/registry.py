"""Resolving metric names and entity keys to ids in bulk, registering what is new.

Batches carry thousands of samples for a few thousand entities: everything here works in a
constant number of queries per batch, never one per sample.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from inventory.models import Cluster
from inventory.services import (
    DeviceSpec,
    accelerators_ensure,
    accelerators_move,
    accelerators_seen,
    nodes_ensure,
)
from telemetry.catalogue.entities import entities_save, entity_build
from telemetry.catalogue.known import KNOWN
from telemetry.catalogue.limits import check_count
from telemetry.models import Entity, EntityKind, MetricDefinition


def metrics_by_name(names: Iterable[str]) -> dict[str, MetricDefinition]:
    return {m.name: m for m in MetricDefinition.objects.filter(name__in=set(names))}


def metrics_register_unmapped(names: dict[str, tuple[str, str]]) -> None:
    """Create catalogue rows (``mapped=False``, staff-only) for exporter-only metric names.

    At most ``TELEMETRY_MAX_NEW_METRICS_PER_PUSH`` new names per push and
    ``TELEMETRY_MAX_UNMAPPED_METRICS`` in all; over either cap the push is refused (400
    naming the cap) before anything is created.
    """
    new = set(names) - set(
        MetricDefinition.objects.filter(name__in=list(names)).values_list("name", flat=True)
    )
    if not new:
        return
    check_count(
        len(new),
        cap="TELEMETRY_MAX_NEW_METRICS_PER_PUSH",
        what="new metric names in one push",
        field="metric",
    )
    check_count(
        MetricDefinition.objects.filter(mapped=False).count() + len(new),
        cap="TELEMETRY_MAX_UNMAPPED_METRICS",
        what="exporter-only metric names in the catalogue",
        field="metric",
    )
    names = {name: names[name] for name in new}
    MetricDefinition.objects.bulk_create(
        [
            MetricDefinition(
                name=name,
                entity_kind=kind,
                unit="",
                description=f"exporter metric kept as received ({source})",
                mapped=False,
            )
            for name, (kind, source) in names.items()
        ],
        ignore_conflicts=True,
    )


def entities_check_new(refs_by_cluster: dict, *, field: str = "entity") -> None:
    """Refuse (400 naming the cap) a push that would register too many new entities.

    ``refs_by_cluster`` maps a cluster to the ``(kind, key)`` pairs the push names; the caps
    are ``TELEMETRY_MAX_NEW_ENTITIES_PER_PUSH`` over all clusters and
    ``TELEMETRY_MAX_ENTITIES_PER_CLUSTER`` for each. Called before anything is created.
    """
    total = 0
    missing_by_cluster = {}
    for cluster, refs in refs_by_cluster.items():
        refs = set(refs)
        missing = len(refs) - len(_entity_ids(cluster, refs))
        missing_by_cluster[cluster] = missing
        total += missing
    check_count(
        total,
        cap="TELEMETRY_MAX_NEW_ENTITIES_PER_PUSH",
        what="new entities in one push",
        field=field,
    )
    for cluster, missing in missing_by_cluster.items():
        if missing:
            check_count(
                Entity.objects.filter(cluster=cluster).count() + missing,
                cap="TELEMETRY_MAX_ENTITIES_PER_CLUSTER",
                what=f"entities in cluster {cluster.name!r}",
                field=field,
            )


def entities_resolve(
    cluster: Cluster, refs: Iterable[tuple[str, str]], *, create: bool = True
) -> dict[tuple[str, str], int]:
    """Map ``(kind, key)`` to entity ids for ``cluster``, creating plain entities if asked."""
    wanted = set(refs)
    found = _entity_ids(cluster, wanted)
    missing = wanted - found.keys()
    if missing and create:
        entities_save(
            entity_build(cluster=cluster, kind=kind, key=key) for kind, key in sorted(missing)
        )
        found.update(_entity_ids(cluster, missing))
    return found


def entities_new_allowed(cluster: Cluster, refs: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of ``refs`` (in order) one push may name: every known entity, and new ones up to
    ``TELEMETRY_MAX_NEW_ENTITIES_PER_PUSH`` and the cluster's ``TELEMETRY_MAX_ENTITIES_PER_
    CLUSTER``. Remote-write keeps the rest of its batch instead of refusing it
    (:func:`entities_check_new` is the all-or-nothing form the other paths use)."""
    unique = list(dict.fromkeys(refs))
    known = set(_entity_ids(cluster, set(unique)))
    existing = Entity.objects.filter(cluster=cluster).count()
    room = min(
        settings.TELEMETRY_MAX_NEW_ENTITIES_PER_PUSH,
        settings.TELEMETRY_MAX_ENTITIES_PER_CLUSTER - existing,
    )
    new = [ref for ref in unique if ref not in known][: max(room, 0)]
    return known | set(new)


def _entity_ids(cluster: Cluster, refs: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    result: dict[tuple[str, str], int] = {}
    by_kind: dict[str, list[str]] = {}
    for kind, key in refs:
        by_kind.setdefault(kind, []).append(key)
    for kind, keys in by_kind.items():
        for chunk_start in range(0, len(keys), 5000):
            chunk = keys[chunk_start : chunk_start + 5000]
            rows = Entity.objects.filter(cluster=cluster, kind=kind, key__in=chunk).values_list(
                "key", "id"
            )
            result.update({(kind, key): entity_id for key, entity_id in rows})
    return result


@dataclass
class DeviceRef:
    """An accelerator (or MIG slice) as an exporter describes it. ``key`` — its entity key —
    is the chip id alone (docs/architecture.md §5): never the host, so a chip that moves keeps
    its entity and two chips behind one address never share one."""

    host: str
    index: int | None
    vendor_id: str
    model_name: str = ""
    health: int | None = None
    attributes: dict[str, str] = field(default_factory=dict)
    parent_vendor_id: str | None = None

    @property
    def key(self) -> str:
        return self.vendor_id

    def spec(self) -> DeviceSpec:
        attributes = self.attributes
        return DeviceSpec(
            host=self.host,
            index=self.index,
            vendor_id=self.vendor_id,
            model_name=self.model_name,
            parent_vendor_id=self.parent_vendor_id,
            mig_profile=attributes.get("mig_profile", ""),
            gpu_instance_id=_int_or_none(attributes.get("gpu_instance_id")),
            compute_instance_id=_int_or_none(attributes.get("compute_instance_id")),
        )


def devices_register(
    cluster: Cluster,
    devices: Iterable[DeviceRef],
    *,
    seen_at: datetime | None = None,
    labels: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, int]:
    """Register unseen nodes and accelerators under ``cluster``; return accelerator entity ids.

    Nodes and cards are created by the inventory service (``inventory.services``). A chip
    already known in the cluster under another host is *moved* there (card, entity and
    history follow it; an ``AcceleratorMove`` row records it), never registered twice.
    ``labels`` (hostname → its series' labels) let the cluster's topology mapping place new
    nodes.
    """
    devices = {d.key: d for d in devices}
    if labels is None:
        placed = _already_placed(cluster, devices)
        if placed is not None:
            return placed
    specs = [d.spec() for d in devices.values()]
    nodes = nodes_ensure(
        cluster=cluster,
        hosts={d.host for d in devices.values()},
        labels=labels,
        registered_by_exporter=True,
    )
    moved = accelerators_move(
        cluster=cluster, devices=specs, nodes=nodes, seen_at=seen_at or timezone.now()
    )
    if moved:
        KNOWN.clear()  # memo entries name the chip under its old host (telemetry.catalogue.known)
    for card in moved:  # the entity's topology path follows its card
        node = card.node
        Entity.objects.filter(cluster=cluster, accelerator_id=card.pk).update(
            node=node,
            rack_id=node.rack_id,
            supernode_id=node.rack.supernode_id if node.rack_id else None,
        )
    accelerators = accelerators_ensure(cluster=cluster, devices=specs, nodes=nodes)
    entities = _entity_ids(cluster, {(EntityKind.ACCELERATOR, key) for key in devices})
    new_entities = []
    for key, device in devices.items():
        if (EntityKind.ACCELERATOR, key) in entities:
            continue
        new_entities.append(
            entity_build(
                cluster=cluster,
                kind=EntityKind.ACCELERATOR,
                key=key,
                node=nodes[device.host],
                accelerator=accelerators[(device.host, device.vendor_id)],
            )
        )
    entities_save(new_entities)
    entities.update(_entity_ids(cluster, {(EntityKind.ACCELERATOR, key) for key in devices}))
    return {key: entities[(EntityKind.ACCELERATOR, key)] for key in devices}


def _already_placed(cluster: Cluster, devices: Mapping[str, DeviceRef]) -> dict[str, int] | None:
    """The entity ids of ``devices`` when every one is registered on the host it names now
    (nothing to create or move: a PromQL sync of an unchanged fleet, 102,400 cards, reads one
    column set instead of building every card and node row); ``None`` otherwise. Without
    topology ``labels`` registration changes nothing else, so the answer is the same."""
    found: dict[str, int] = {}
    keys = list(devices)
    for start in range(0, len(keys), 5000):
        rows = Entity.objects.filter(
            cluster=cluster, kind=EntityKind.ACCELERATOR, key__in=keys[start : start + 5000]
        ).values_list("key", "id", "accelerator__node__hostname")
        for key, entity_id, hostname in rows:
            if hostname != devices[key].host:
                return None  # a chip moved: the full path records the move
            found[key] = entity_id
    return found if len(found) == len(devices) else None


def accelerators_seen_by_entity(
    entity_ids: Iterable[int], *, seen_at: datetime, min_gap_seconds: float = 0.0
) -> int:
    """``last_seen`` for the cards behind ``entity_ids``: one ``UPDATE`` per batch. Which card
    an entity is comes from the memo (ids are never reused: a stale entry updates nothing).

    A card this process marked seen less than ``min_gap_seconds`` before ``seen_at`` is left
    alone: a card's fields arrive spread over many remote-write requests of the same scrape,
    and rewriting its row for each (inside each request's transaction, while other shards do
    the same) cost more than the samples. Callers pass half the scrape interval, so
    ``last_seen`` lags the truth by less than that and absence (whole intervals) is unaffected.
    """
    entity_ids = set(entity_ids)
    cards = KNOWN.get_many("card", entity_ids)
    missing = entity_ids - cards.keys()
    if missing:
        found = dict(
            Entity.objects.filter(id__in=list(missing), accelerator__isnull=False).values_list(
                "id", "accelerator_id"
            )
        )
        KNOWN.put_after_commit("card", found)
        cards.update(found)
    card_ids = set(cards.values())
    now = seen_at.timestamp()
    if min_gap_seconds > 0:
        written = KNOWN.get_many("seen", card_ids)
        card_ids = {c for c in card_ids if now - written.get(c, float("-inf")) >= min_gap_seconds}
    if not card_ids:
        return 0
    KNOWN.put_after_commit("seen", dict.fromkeys(card_ids, now))
    return accelerators_seen(ids=card_ids, seen_at=seen_at)


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None
