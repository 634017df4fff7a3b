"""Creating twin runs (with the inventory their topology describes) and controlling them."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from django.db import transaction
from django.utils import timezone

from accounts.models import Tenant
from inventory.models import Accelerator, Cluster, Confidence, HardwareModel, Link, Workload
from inventory.services import (
    DeviceSpec,
    LinkSpec,
    Placement,
    accelerators_ensure,
    cluster_default_set,
    links_ensure,
    nodes_ensure,
    racks_ensure,
    supernodes_ensure,
)
from simulation.engine import HARDWARE, METRICS, Engine, Scenario
from simulation.models import TwinRun
from simulation.services.lag import tick_lag_record
from telemetry.catalogue.entities import entities_save, entity_build
from telemetry.catalogue.heartbeats import heartbeat_pause
from telemetry.models import EntityKind
from telemetry.receivers.twin import catalogue_sync


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


def engine_catalogue_after_migrate(**_: object) -> None:
    engine_catalogue_sync()


def hardware_catalog_sync() -> None:
    """Seed the hardware catalogue from the engine's; existing rows (operator edits) are kept."""
    for spec in HARDWARE.values():
        HardwareModel.objects.get_or_create(
            slug=spec.id,
            defaults={
                "name": spec.name,
                "vendor": "NVIDIA" if spec.id.startswith(("h100", "a100")) else "Huawei",
                "hbm_bytes": spec.hbm_bytes,
                "hbm_bandwidth_bytes_per_s": spec.hbm_bandwidth_bytes_per_s,
                "peak_flops": spec.peak_flops,
                "tdp_watts": spec.tdp_watts,
                "confidence": spec.confidence if spec.confidence in Confidence.values else "low",
                "source_note": spec.notes[:300],
            },
        )


def hardware_catalog_after_migrate(**_: object) -> None:
    hardware_catalog_sync()


SANDBOX_TENANT_SLUG = "sandbox"


def sandbox_tenant() -> Tenant:
    """The tenant test runs' workloads belong to: no customer sees or is billed for it."""
    tenant, _ = Tenant.objects.get_or_create(
        slug=SANDBOX_TENANT_SLUG, defaults={"name": "Sandbox (twin test runs)"}
    )
    return tenant


def scenario_tenants(scenario: Scenario) -> list[str]:
    """The tenant names a scenario's workloads carry (e.g. ``acme-bank``), sorted."""
    return sorted({w["tenant"] for w in Engine(scenario).workloads()})


@transaction.atomic
def twin_run_create(
    *,
    name: str,
    cluster: Cluster,
    scenario: Scenario,
    tenant: Tenant | None = None,
    tenant_map: Mapping[str, str] | None = None,
) -> TwinRun:
    """Create a run and the cluster inventory its topology describes.

    The run's workloads belong to the sandbox tenant unless the caller assigns real ones
    deliberately: ``tenant`` puts every workload in that tenant; ``tenant_map`` maps a
    scenario's tenant names to portal tenant slugs (created if missing — the demo seeding's
    way); scenario tenants it does not name stay in the sandbox. Scenario tenant names alone
    never reach a customer's account or bill.
    """
    if tenant is not None and tenant_map:
        raise ValueError("pass tenant or tenant_map, not both")
    engine = Engine(scenario)
    engine_catalogue_sync()
    hardware_catalog_sync()
    _inventory_from_topology(cluster, engine, _tenant_resolver(tenant, tenant_map or {}))
    return TwinRun.objects.create(
        name=name,
        cluster=cluster,
        scenario=scenario.to_dict(),
        state=engine.save_state(),
        wall_start=timezone.now(),
    )


@transaction.atomic
def twin_run_new(
    *,
    name: str,
    policy: str,
    scenario: Scenario,
    description: str = "",
    tenant: Tenant | None = None,
    default_for_pages: bool = False,
) -> TwinRun:
    """An operator's new run on a new cluster (the twin page and ``POST /api/v1/twin/runs/``).

    Sandboxed unless the operator says otherwise: its workloads go to the sandbox tenant
    (``tenant`` assigns a real one) and it is not the default cluster of any page
    (``default_for_pages`` makes it the default of its side).
    """
    cluster = Cluster.objects.create(
        name=name,
        kind=Cluster.Kind.UNIFIED if policy == "unified" else Cluster.Kind.SPLIT,
        description=description,
    )
    run = twin_run_create(name=name, cluster=cluster, scenario=scenario, tenant=tenant)
    if default_for_pages:
        cluster_default_set(cluster)
    return run


def _tenant_resolver(
    tenant: Tenant | None, tenant_map: Mapping[str, str]
) -> Callable[[str], Tenant]:
    found: dict[str, Tenant] = {}

    def resolve(scenario_tenant: str) -> Tenant:
        if scenario_tenant not in found:
            slug = tenant_map.get(scenario_tenant)
            if tenant is not None:
                found[scenario_tenant] = tenant
            elif slug:
                found[scenario_tenant], _ = Tenant.objects.get_or_create(
                    slug=slug, defaults={"name": slug.replace("-", " ").title()}
                )
            else:
                found[scenario_tenant] = sandbox_tenant()
        return found[scenario_tenant]

    return resolve


def _inventory_from_topology(
    cluster: Cluster, engine: Engine, tenant_of: Callable[[str], Tenant]
) -> None:
    listing = engine.topology()
    topology = engine.scenario.topology
    hardware = HardwareModel.objects.filter(slug=topology.hardware).first()
    if cluster.hardware_model_id is None and hardware is not None:
        cluster.hardware_model = hardware
        cluster.save(update_fields=["hardware_model"])
    placements = {r["key"]: Placement(r["supernode"], r["key"]) for r in listing["racks"]}
    supernodes = supernodes_ensure(cluster=cluster, names=[s["key"] for s in listing["supernodes"]])
    racks = {
        p.rack: rack
        for p, rack in racks_ensure(cluster=cluster, placements=placements.values()).items()
    }
    nodes = nodes_ensure(
        cluster=cluster,
        hosts=(),
        placements={n["key"]: placements[n["rack"]] for n in listing["nodes"]},
    )
    accelerators = accelerators_ensure(
        cluster=cluster,
        devices=[
            DeviceSpec(
                host=c["node"],
                index=int(c["key"].rsplit("c", 1)[1]),
                vendor_id=f"twin:{cluster.name}/{c['key']}",
                model_name=c["hardware"],
                hardware_model=hardware,
                health=Accelerator.Health.HEALTHY,
            )
            for c in listing["cards"]
        ],
        nodes=nodes,
    )
    links = links_ensure(
        cluster=cluster,
        links=[
            LinkSpec(
                key=link["key"],
                kind=Link.Kind.INTER_RACK,
                endpoint_a=link["rack"],
                endpoint_b=f"{link['rack'].split('/', 1)[0]}/spine",
                capacity_bytes_per_s=topology.link_bandwidth_bytes_per_s,
            )
            for link in listing["links"]
        ],
    )
    cards = {f"{a.node.hostname}/c{a.index}": a for a in accelerators.values()}
    entities = [
        entity_build(cluster=cluster, kind=EntityKind.SUPERNODE, key=k, supernode=s)
        for k, s in supernodes.items()
    ]
    entities += [
        entity_build(cluster=cluster, kind=EntityKind.RACK, key=k, rack=r) for k, r in racks.items()
    ]
    entities += [
        entity_build(cluster=cluster, kind=EntityKind.NODE, key=k, node=n) for k, n in nodes.items()
    ]
    entities += [
        entity_build(cluster=cluster, kind=EntityKind.ACCELERATOR, key=k, accelerator=a)
        for k, a in cards.items()
    ]
    entities += [
        entity_build(
            cluster=cluster, kind=EntityKind.LINK, key=k, link=link, rack=racks.get(link.endpoint_a)
        )
        for k, link in links.items()
    ]
    services = {s.name: s for s in engine.scenario.services}
    jobs = {j.name: j for j in engine.scenario.training_jobs}
    for w in engine.workloads():
        tenant = tenant_of(w["tenant"])
        sizing = _workload_sizing(services.get(w["name"]), jobs.get(w["name"]))
        workload, created = Workload.objects.get_or_create(
            cluster=cluster,
            name=w["name"],
            defaults={
                "tenant": tenant,
                "kind": w["kind"],
                "criticality": "core" if w.get("criticality") == "core" else "non_core",
                **sizing,
            },
        )
        targets = {k: v for k, v in sizing.items() if k.startswith("slo_")}
        if not created and any(getattr(workload, k) != v for k, v in targets.items()):
            # A new run on an existing cluster: its scenario's targets are the operator's.
            for k, v in targets.items():
                setattr(workload, k, v)
            workload.full_clean(validate_unique=False, validate_constraints=False)
            workload.save(update_fields=list(targets))
        entities.append(
            entity_build(
                cluster=cluster, kind=EntityKind.WORKLOAD, key=w["name"], workload=workload
            )
        )
    entities_save(entities)


@transaction.atomic
def twin_run_control(*, run_id: int, action: str, steps_per_tick: int | None = None) -> TwinRun:
    """Start, pause, reset or change the speed of a run, under the run's row lock.

    Reset restores the scenario's initial engine state; sequence numbers keep counting so
    ticks already committed stay unique.
    """
    run = TwinRun.objects.select_for_update().get(pk=run_id)
    if action == "start":
        if run.status != TwinRun.Status.RUNNING:
            run.resumed_at = timezone.now()  # the pause is not a gap in the data
        run.status = TwinRun.Status.RUNNING
    elif action == "pause":
        run.status = TwinRun.Status.PAUSED
    elif action == "reset":
        run.state = Engine(Scenario.from_dict(run.scenario)).save_state()
        # The new state is its own checkpoint; engines kept from before are stale.
        run.checkpoint_seq, run.checkpoint_pool_seq = run.tick_seq, run.pool_seq
        run.state_epoch += 1
        run.sim_time = 0.0
        run.last_error = ""
    elif action == "speed":
        if steps_per_tick is None or not 1 <= steps_per_tick <= 60:
            raise ValueError("steps_per_tick must be between 1 and 60")
        run.steps_per_tick = steps_per_tick
    else:
        raise ValueError(f"unknown action {action!r}; use start, pause, reset or speed")
    run.save()
    if action == "pause":
        # Paused on purpose: its ticks show as paused (not down) on the status page, and the
        # lag series drops to 0 at once so the "twin tick lag" rule resolves.
        for tick in ("scheduler", "pool"):
            heartbeat_pause(kind="tick", name=f"{tick}:{run.name}")
        tick_lag_record(run=run)
    return run


def _workload_sizing(service, job) -> dict:
    """SLO targets and requested cards as the scenario states them (operator inputs).

    The scenario's TTFT and TPOT targets are copied as they are; nothing is derived from the
    model's output.
    """
    if service is not None:
        return {
            "slo_ttft_ms": service.slo_ttft_ms,
            "slo_tpot_ms": getattr(service, "slo_tpot_ms", None),
            "slo_p99_ms": service.slo_p99_ms,
            "cards_requested": service.tp * service.min_replicas,
        }
    if job is not None:
        return {"cards_requested": job.min_cards}
    return {}
