"""Creating twin runs (with their inventory) and advancing them exactly once per tick."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from monitoring.models import (
    Accelerator,
    Cluster,
    Entity,
    EntityKind,
    Node,
    Rack,
    Supernode,
    Tenant,
    Workload,
)
from monitoring.telemetry.catalogue import catalogue_sync
from monitoring.telemetry.registry import entities_resolve, metrics_by_name
from monitoring.telemetry.store import samples_write
from rollout.selectors import traffic_shares_for_cluster
from simulation.engine import METRICS, Engine, Scenario
from simulation.models import TwinRun, TwinTick


def engine_catalogue_sync() -> None:
    """Register every metric the engine emits in the portal's catalogue."""
    catalogue_sync(
        tuple(
            (
                m.name,
                m.unit,
                m.entity_kind,
                "counter" if m.name.endswith("_total") else "gauge",
                m.description,
            )
            for m in METRICS
        )
    )


@transaction.atomic
def twin_run_create(*, name: str, cluster: Cluster, scenario: Scenario) -> TwinRun:
    """Create a run and the cluster inventory its topology describes."""
    engine = Engine(scenario)
    engine_catalogue_sync()
    _inventory_from_topology(cluster, engine)
    return TwinRun.objects.create(
        name=name,
        cluster=cluster,
        scenario=scenario.to_dict(),
        state=engine.save_state(),
        wall_start=timezone.now(),
    )


def _inventory_from_topology(cluster: Cluster, engine: Engine) -> None:
    listing = engine.topology()
    Supernode.objects.bulk_create(
        [Supernode(cluster=cluster, name=s["key"]) for s in listing["supernodes"]],
        ignore_conflicts=True,
    )
    supernodes = {s.name: s for s in cluster.supernodes.all()}
    Rack.objects.bulk_create(
        [Rack(supernode=supernodes[r["supernode"]], name=r["key"]) for r in listing["racks"]],
        ignore_conflicts=True,
    )
    racks = {r.name: r for r in Rack.objects.filter(supernode__cluster=cluster)}
    Node.objects.bulk_create(
        [Node(cluster=cluster, hostname=n["key"], rack=racks[n["rack"]]) for n in listing["nodes"]],
        ignore_conflicts=True,
    )
    nodes = {n.hostname: n for n in cluster.nodes.all()}
    Accelerator.objects.bulk_create(
        [
            Accelerator(
                node=nodes[c["node"]],
                index=int(c["key"].rsplit("c", 1)[1]),
                vendor_id=f"twin:{cluster.name}/{c['key']}",
                model_name=c["hardware"],
                health=Accelerator.Health.HEALTHY,
            )
            for c in listing["cards"]
        ],
        ignore_conflicts=True,
    )
    cards = {
        f"{a.node.hostname}/c{a.index}": a
        for a in Accelerator.objects.filter(node__cluster=cluster).select_related("node__rack")
    }
    entities = [
        Entity(cluster=cluster, kind=EntityKind.SUPERNODE, key=k, supernode=s)
        for k, s in supernodes.items()
    ]
    entities += [
        Entity(cluster=cluster, kind=EntityKind.RACK, key=k, rack=r, supernode_id=r.supernode_id)
        for k, r in racks.items()
    ]
    entities += [
        Entity(
            cluster=cluster,
            kind=EntityKind.NODE,
            key=k,
            node=n,
            rack=n.rack,
            supernode_id=n.rack.supernode_id if n.rack else None,
        )
        for k, n in nodes.items()
    ]
    entities += [
        Entity(
            cluster=cluster,
            kind=EntityKind.ACCELERATOR,
            key=k,
            accelerator=a,
            node=a.node,
            rack=a.node.rack,
            supernode_id=a.node.rack.supernode_id if a.node.rack else None,
        )
        for k, a in cards.items()
    ]
    for w in engine.workloads():
        tenant, _ = Tenant.objects.get_or_create(
            slug=w["tenant"], defaults={"name": w["tenant"].replace("-", " ").title()}
        )
        workload, _ = Workload.objects.get_or_create(
            cluster=cluster,
            name=w["name"],
            defaults={
                "tenant": tenant,
                "kind": w["kind"],
                "criticality": "core" if w.get("criticality") == "core" else "non_core",
            },
        )
        entities.append(
            Entity(
                cluster=cluster,
                kind=EntityKind.WORKLOAD,
                key=w["name"],
                workload=workload,
                tenant=tenant,
            )
        )
    Entity.objects.bulk_create(entities, ignore_conflicts=True, batch_size=2000)


@dataclass(frozen=True)
class TickOutcome:
    committed: bool
    seq: int
    samples: int = 0
    reason: str = ""


def twin_tick(*, run_id: int, expected_seq: int) -> TickOutcome:
    """Advance ``run_id`` by one tick if it is still at ``expected_seq``; exactly once.

    The run row is locked for the whole tick and the telemetry, the new engine state, the
    sequence number and the TwinTick row commit together: a duplicate delivery or a second
    beat finds the sequence moved on and does nothing; a worker killed mid-tick commits
    nothing, and the redelivered task performs the tick.
    """
    started = time.perf_counter()
    with transaction.atomic():
        run = TwinRun.objects.select_for_update().get(pk=run_id)
        if run.tick_seq != expected_seq:
            return TickOutcome(False, run.tick_seq, reason="already committed")
        if run.status != TwinRun.Status.RUNNING:
            return TickOutcome(False, run.tick_seq, reason="paused")
        engine = Engine.load_state(bytes(run.state))
        for name, share in traffic_shares_for_cluster(cluster_id=run.cluster_id).items():
            engine.set_traffic_share(name, share)
        rows = []
        now = time.time()
        steps = run.steps_per_tick
        for i in range(steps):
            snapshot = engine.step()
            # Stamped at wall-clock time, spread over the tick interval: the twin runs faster
            # than real time, and charts of the last hour should show what it simulated.
            ts = now - (steps - 1 - i) * settings.TWIN_TICK_SECONDS / steps
            rows.extend(_snapshot_rows(run, snapshot, ts))
        samples_write(rows)
        run.state = engine.save_state()
        run.sim_time = engine.t
        run.tick_seq = expected_seq + 1
        run.last_tick_at = timezone.now()
        run.last_tick_ms = (time.perf_counter() - started) * 1000
        run.save()
        TwinTick.objects.create(
            run=run,
            seq=run.tick_seq,
            sim_time=run.sim_time,
            samples=len(rows),
            duration_ms=run.last_tick_ms,
        )
    return TickOutcome(True, expected_seq + 1, samples=len(rows))


def _snapshot_rows(run: TwinRun, snapshot, ts: float) -> list[tuple[int, int, float, float]]:
    raw = list(snapshot.rows())
    metrics = metrics_by_name({r[0] for r in raw})
    if len(metrics) < len({r[0] for r in raw}):
        engine_catalogue_sync()
        metrics = metrics_by_name({r[0] for r in raw})
    entities = entities_resolve(run.cluster, {(r[1], r[2]) for r in raw})
    return [(metrics[m].id, entities[(kind, key)], ts, float(v)) for m, kind, key, v in raw]
