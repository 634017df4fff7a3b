"""Plans and criteria bind to workload identities (ids), never names (issue 24, part 1).

The bug replayed: a plan moved ``train-0204`` from ``legacy-h100``; the unified target also
had a ``train-0204`` — another tenant's finished job — and both the traffic and the gate
followed the name onto it. An ambiguous name is now refused when the plan is authored, and
everything after follows ids.
"""

from __future__ import annotations

import pytest
from django.apps import apps as django_apps
from django.core.exceptions import ValidationError

from inventory.models import Workload
from rollout.models import Criterion, MetricResult, MigrationPlan, PhaseKind
from rollout.selectors import traffic_shares_for_cluster
from rollout.services.audit import Actor
from rollout.services.criteria import criterion_save
from rollout.services.transitions import plan_start
from tests.rollout.test_authoring import body


def _give_to_panda(workload: Workload, tenants) -> None:
    workload.tenant = tenants["panda"]
    workload.save(update_fields=["tenant"])


def test_a_name_that_is_another_tenants_workload_on_the_target_is_refused_when_authored(
    client_as, workloads, tenants
):
    # The target's acme-batch is someone else's (like the demo's finished train-0204).
    _give_to_panda(workloads["unified:acme-batch"], tenants)
    response = client_as("operator").post(
        "/api/v1/plans/", body(workloads), content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert "ambiguous" in response.content.decode()
    assert "acme-batch" in response.content.decode()
    assert not MigrationPlan.objects.exists()  # nothing written


def test_a_criterion_naming_another_tenants_workload_on_the_target_is_refused(
    client_as, workloads, tenants
):
    _give_to_panda(workloads["unified:acme-batch"], tenants)
    criteria = [
        {
            "phase": "gray",
            "name": "neighbour",
            "metric": "inference_latency_p99_seconds",
            "entity_key": "acme-batch",
            "aggregation": "p99",
            "comparator": "le",
            "threshold": 2.0,
        }
    ]
    response = client_as("operator").post(
        "/api/v1/plans/",
        {**body(workloads), "pilot": [], "criteria": criteria},
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert "ambiguous" in response.content.decode()
    assert not MigrationPlan.objects.exists()


def test_authored_criteria_and_plan_workloads_carry_the_target_workloads_id(client_as, workloads):
    response = client_as("operator").post(
        "/api/v1/plans/", body(workloads), content_type="application/json"
    )
    assert response.status_code == 201, response.content
    plan = MigrationPlan.objects.get()
    moved = {item.workload_id: item.target_workload_id for item in plan.workloads.all()}
    assert moved == {
        workloads["legacy:acme-batch"].pk: workloads["unified:acme-batch"].pk,
        workloads["legacy:acme-chat"].pk: workloads["unified:acme-chat"].pk,
    }
    for criterion in Criterion.objects.filter(phase__plan=plan):
        assert criterion.workload.cluster_id == plan.target_cluster_id
        assert criterion.workload.tenant_id == plan.tenant_id


def test_a_criterion_by_id_of_another_tenants_workload_is_refused(plan_factory, workloads, users):
    plan = plan_factory()
    panda = Workload.objects.create(
        tenant=workloads["legacy:acme-chat"].tenant.__class__.objects.get(slug="panda"),
        cluster=plan.target_cluster,
        name="panda-chat",
        kind="inference",
    )
    criterion = Criterion(
        phase=plan.phases.get(kind=PhaseKind.GRAY),
        name="spy",
        metric="inference_latency_p99_seconds",
        workload=panda,
        aggregation="p99",
        comparator="le",
        threshold=1.0,
    )
    with pytest.raises(ValidationError, match="another tenant"):
        criterion_save(criterion=criterion, actor=Actor(users["operator"]))


def test_traffic_follows_the_plans_own_workload_never_a_namesake_that_appeared_later(
    plan_factory, workloads, tenants, users, clusters
):
    # The target has no acme-batch of acme's when the plan is authored...
    workloads["unified:acme-batch"].delete()
    plan = plan_factory()
    # ...then another tenant's workload of that name appears there.
    Workload.objects.create(
        tenant=tenants["panda"], cluster=clusters["unified"], name="acme-batch", kind="training"
    )
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    shares = traffic_shares_for_cluster(cluster_id=clusters["unified"].pk)
    assert "acme-batch" not in shares  # panda's job is not switched on by acme's plan
    assert shares == {"acme-chat": 0.0}
    # The source still hands its pilot traffic off.
    assert traffic_shares_for_cluster(cluster_id=clusters["legacy"].pk)["acme-batch"] == 0.0


def test_migrating_binds_existing_criteria_and_leaves_an_ambiguous_one_unbound_and_inconclusive(
    plan_factory, workloads, tenants, users
):
    from importlib import import_module

    from rollout.models import AnalysisRun
    from rollout.services.analysis import analysis_run_step
    from tests.rollout.conftest import at

    migration = import_module("rollout.migrations.0008_workload_identities_and_baselines")
    plan = plan_factory(criteria={PhaseKind.PILOT: [{"name": "chat"}, {"name": "batch"}]})
    Criterion.objects.filter(name="batch").update(entity_key="acme-batch")
    # As rows written before identities existed: names only.
    Criterion.objects.update(workload=None, baseline_workload=None)
    plan.workloads.update(target_workload=None)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    _give_to_panda(workloads["unified:acme-batch"], tenants)
    assert MetricResult.objects.get(name="chat").spec["workload_id"] is None

    migration.bind_by_identity(django_apps, None)

    chat = Criterion.objects.get(name="chat")
    assert chat.workload_id == workloads["unified:acme-chat"].pk
    assert Criterion.objects.get(name="batch").workload_id is None  # panda's on the target
    item = plan.workloads.get(workload=workloads["legacy:acme-chat"])
    assert item.target_workload_id == workloads["unified:acme-chat"].pk
    assert plan.workloads.get(workload=workloads["legacy:acme-batch"]).target_workload is None
    run = AnalysisRun.objects.get(gate__plan=plan)
    assert run.metrics.get(name="chat").spec["workload_id"] == chat.workload_id
    analysis_run_step(run_id=run.pk, now=at(0))
    measured = run.metrics.get(name="batch").measurements.get()
    assert measured.outcome == "inconclusive"
    assert "not bound to a workload identity" in measured.reason
