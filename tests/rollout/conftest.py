"""Fixtures for the migration workflow: clusters, workloads, telemetry writers, plans."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from accounts.services.roles import ROLE_APPROVER, roles_ensure
from inventory.models import Cluster, Workload
from rollout.models import Criterion, PhaseKind
from rollout.services.audit import Actor
from rollout.services.criteria import criterion_save, phase_manual_gate_set
from rollout.services.plans import phases_without_gate, plan_create
from telemetry.models import Entity, EntityKind, MetricDefinition
from telemetry.receivers.twin import samples_write

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
METRIC = "inference_latency_p99_seconds"


@pytest.fixture
def clusters(db) -> dict[str, Cluster]:
    """The same accelerator on both sides: relative criteria compare like with like (factor 1);
    tests of cross-hardware expectations give the clusters different models."""
    from inventory.models import HardwareModel

    card, _ = HardwareModel.objects.get_or_create(
        slug="h100-sxm",
        defaults={
            "name": "H100 SXM",
            "vendor": "nvidia",
            "hbm_bytes": 80 * 2**30,
            "hbm_bandwidth_bytes_per_s": 3.35e12,
            "peak_flops": 989e12,
            "confidence": "high",
        },
    )
    return {
        "unified": Cluster.objects.create(
            name="uni", kind=Cluster.Kind.UNIFIED, hardware_model=card
        ),
        "legacy": Cluster.objects.create(name="old", kind=Cluster.Kind.LEGACY, hardware_model=card),
    }


@pytest.fixture
def workloads(clusters, tenants) -> dict[str, Workload]:
    """Same names on both clusters (like the demo twin): a non-core and a core service."""
    made = {}
    for key, cluster in clusters.items():
        for name, criticality in (("acme-batch", "non_core"), ("acme-chat", "core")):
            workload = Workload.objects.create(
                tenant=tenants["acme"],
                cluster=cluster,
                name=name,
                kind=Workload.Kind.INFERENCE,
                criticality=criticality,
            )
            Entity.objects.create(
                cluster=cluster,
                kind=EntityKind.WORKLOAD,
                key=name,
                workload=workload,
                tenant=tenants["acme"],
            )
            made[f"{key}:{name}"] = workload
    MetricDefinition.objects.get_or_create(
        name=METRIC, defaults={"unit": "seconds", "entity_kind": "workload"}
    )
    return made


def write(cluster: Cluster, key: str, ts: datetime, value: float, metric: str = METRIC) -> None:
    """One raw sample for workload ``key`` on ``cluster``."""
    definition = MetricDefinition.objects.get(name=metric)
    entity = Entity.objects.get(cluster=cluster, kind="workload", key=key)
    samples_write([(definition.pk, entity.pk, ts.timestamp(), value)])


@pytest.fixture
def approvers(users, db) -> list:
    from accounts.models import User

    group = roles_ensure()[ROLE_APPROVER]
    made = [users["approver"]]
    for i in range(2, 6):
        user = User.objects.create_user(username=f"appr{i}", password="x", is_staff=True)
        user.groups.add(group)
        made.append(user)
    return made


@pytest.fixture
def plan_factory(clusters, workloads, tenants, users):
    def make(*, criteria: dict | None = None, required_approvals: int = 1, gray_steps=None):
        plan = plan_create(
            tenant=tenants["acme"],
            name=f"plan-{len(criteria or {})}-{id(criteria)}",
            source_cluster=clusters["legacy"],
            target_cluster=clusters["unified"],
            workloads={
                PhaseKind.PILOT: [workloads["legacy:acme-batch"]],
                PhaseKind.GRAY: [workloads["legacy:acme-chat"]],
            },
            actor=Actor(users["operator"]),
            required_approvals=required_approvals,
            gray_steps=gray_steps,
        )
        for kind, specs in (criteria or {}).items():
            phase = plan.phases.get(kind=kind)
            for spec in specs:
                fields = {
                    "name": "latency",
                    "metric": METRIC,
                    "entity_kind": "workload",
                    "entity_key": "acme-chat",
                    "aggregation": "p99",
                    "comparator": "le",
                    "threshold": 1.0,
                    "window_seconds": 60,
                    "count": 3,
                    "interval_seconds": 30,
                    "min_samples": 1,
                    **spec,
                }
                criterion_save(
                    criterion=Criterion(phase=phase, **fields), actor=Actor(users["operator"])
                )
        # Phases without criteria are explicit (audited) manual gates: never gated by nothing.
        for kind in phases_without_gate(plan):
            phase_manual_gate_set(
                phase=plan.phases.get(kind=kind),
                manual=True,
                actor=Actor(users["operator"]),
                reason="test: approvers decide",
            )
        return plan

    return make


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def plan_for_access(tenant: str = "acme"):
    """A draft plan of ``tenant`` (acme by default) for the access-mixin tests (they get only
    ``users``); its clusters and workload are named after the tenant, so both tenants' plans
    can exist side by side."""
    from accounts.models import Tenant, User

    clusters_ = {
        "unified": Cluster.objects.create(name=f"acc-uni-{tenant}", kind=Cluster.Kind.UNIFIED),
        "legacy": Cluster.objects.create(name=f"acc-old-{tenant}", kind=Cluster.Kind.LEGACY),
    }
    owner = Tenant.objects.get(slug=tenant)
    workload = Workload.objects.create(
        tenant=owner, cluster=clusters_["legacy"], name=f"{tenant}-w", kind="inference"
    )
    return plan_create(
        tenant=owner,
        name=f"access-{tenant}",
        source_cluster=clusters_["legacy"],
        target_cluster=clusters_["unified"],
        workloads={PhaseKind.PILOT: [workload]},
        actor=Actor(User.objects.get(username="op")),
    )


def rev(plan) -> int:
    """The current gate's revision as a person would see it now (what decisions must name)."""
    from rollout.models import MigrationPlan

    return (
        MigrationPlan.objects.select_related("current_gate").get(pk=plan.pk).current_gate.revision
    )


@pytest.fixture
def haproxy(tmp_path):
    """A real Debian HAProxy with backend ``llm``: server ``baseline`` (the source, weight
    100) and ``canary`` (the target, weight 0) on loopback ports nobody listens on (weights
    and the Runtime API do not need the servers up)."""
    from tests.servers import HAProxyServer, free_port, haproxy_binary

    if haproxy_binary() is None:
        pytest.skip("haproxy is not installed (make test installs it)")
    server = HAProxyServer(
        tmp_path / "haproxy", {"baseline": free_port(), "canary": free_port()}
    ).start()
    yield server
    server.stop()


@pytest.fixture
def haproxy_router(haproxy, db):
    from rollout.models import TrafficRouter

    router = TrafficRouter(
        name="gateway-chat",
        kind="haproxy",
        haproxy_address=haproxy.address,
        haproxy_backend="llm",
        haproxy_source_server="baseline",
        haproxy_target_server="canary",
        timeout_seconds=2.0,
        # The fixture's servers take no traffic: the weights' read-back alone confirms here
        # (the served split is tested with real backends in test_served_split.py).
        split_tolerance_points=None,
    )
    router.full_clean()
    router.save()
    return router
