"""Twin runs are sandboxed: an operator's test run takes over no page and no customer's bill,
and a paused run is paused — not down, not lagging."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Tenant
from inventory.models import Cluster, Workload
from simulation.engine import default_scenario
from simulation.models import TwinRun
from simulation.selectors import run_statuses
from simulation.services import (
    SANDBOX_TENANT_SLUG,
    scenario_tenants,
    twin_run_control,
    twin_run_create,
    twin_run_new,
    twin_tick,
)
from simulation.services.lag import tick_lag_seconds
from telemetry.read import heartbeat_statuses


def _scenario():
    return default_scenario(cards=256, seed=3)


@pytest.mark.django_db
def test_a_new_run_puts_its_workloads_in_the_sandbox_tenant_not_the_scenarios_tenants():
    cluster = Cluster.objects.create(name="test-64", kind=Cluster.Kind.UNIFIED)
    twin_run_create(name="test-64", cluster=cluster, scenario=_scenario())
    tenants = set(Workload.objects.filter(cluster=cluster).values_list("tenant__slug", flat=True))
    assert tenants == {SANDBOX_TENANT_SLUG}
    for name in scenario_tenants(_scenario()):
        assert not Tenant.objects.filter(slug=name).exists()


@pytest.mark.django_db
def test_a_tenant_map_assigns_named_scenario_tenants_and_leaves_the_rest_in_the_sandbox():
    scenario = _scenario()
    named, *others = scenario_tenants(scenario)
    assert others, "the scenario should carry several tenants"
    cluster = Cluster.objects.create(name="mapped", kind=Cluster.Kind.UNIFIED)
    twin_run_create(
        name="mapped", cluster=cluster, scenario=scenario, tenant_map={named: "real-customer"}
    )
    slugs = set(Workload.objects.filter(cluster=cluster).values_list("tenant__slug", flat=True))
    assert slugs == {"real-customer", SANDBOX_TENANT_SLUG}


@pytest.mark.django_db
def test_an_operator_can_assign_one_real_tenant_deliberately(tenants):
    run = twin_run_new(
        name="for-acme", policy="unified", scenario=_scenario(), tenant=tenants["acme"]
    )
    slugs = set(run.cluster.workloads.values_list("tenant__slug", flat=True))
    assert slugs == {"acme"}


@pytest.mark.django_db
def test_the_twin_form_creates_a_sandboxed_run_that_is_no_pages_default(client_as):
    demo = Cluster.objects.create(name="zz-demo", kind=Cluster.Kind.UNIFIED, default_for_pages=True)
    response = client_as("operator").post(
        "/twin/new/",
        {"name": "aa-test", "cards": 256, "hardware": "ascend-950dt", "policy": "unified",
         "seed": 3},
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:500]
    cluster = Cluster.objects.get(name="aa-test")
    assert not cluster.default_for_pages
    assert set(cluster.workloads.values_list("tenant__slug", flat=True)) == {SANDBOX_TENANT_SLUG}
    demo.refresh_from_db()
    assert demo.default_for_pages


@pytest.mark.django_db
def test_the_twin_form_marks_a_run_the_default_only_when_asked(client_as):
    demo = Cluster.objects.create(name="zz-demo", kind=Cluster.Kind.UNIFIED, default_for_pages=True)
    client_as("operator").post(
        "/twin/new/",
        {"name": "aa-test", "cards": 256, "hardware": "ascend-950dt", "policy": "unified",
         "seed": 3, "default_for_pages": "on", "tenant": "acme"},
    )  # fmt: skip
    cluster = Cluster.objects.get(name="aa-test")
    demo.refresh_from_db()
    assert cluster.default_for_pages and not demo.default_for_pages
    assert set(cluster.workloads.values_list("tenant__slug", flat=True)) == {"acme"}


@pytest.mark.django_db
def test_the_api_creates_a_sandboxed_run_for_operators_only(client_as):
    body = {"name": "api-test", "cards": 256, "policy": "split", "seed": 3}
    assert client_as("approver").post("/api/v1/twin/runs/", body).status_code == 403
    response = client_as("operator").post(
        "/api/v1/twin/runs/", body, content_type="application/json"
    )
    assert response.status_code == 201, response.content
    cluster = Cluster.objects.get(name="api-test")
    assert cluster.kind == Cluster.Kind.SPLIT and not cluster.default_for_pages
    assert set(cluster.workloads.values_list("tenant__slug", flat=True)) == {SANDBOX_TENANT_SLUG}


@pytest.mark.django_db
def test_the_api_refuses_an_unknown_tenant(client_as):
    body = {"name": "api-test", "cards": 256, "seed": 3, "tenant": "nobody"}
    response = client_as("operator").post(
        "/api/v1/twin/runs/", body, content_type="application/json"
    )
    assert response.status_code == 400
    assert not Cluster.objects.filter(name="api-test").exists()


@pytest.mark.django_db
def test_a_paused_run_has_no_lag_however_long_it_stays_paused(twin_run):
    twin_tick(run_id=twin_run.pk, expected_seq=0)
    twin_run_control(run_id=twin_run.pk, action="pause")
    twin_run.refresh_from_db()
    hours_later = timezone.now().timestamp() + 3600
    assert tick_lag_seconds(twin_run, hours_later) == 0.0
    status = next(s for s in run_statuses() if s.run.pk == twin_run.pk)
    assert status.scheduler_lag_s is None


@pytest.mark.django_db
def test_a_restarted_run_measures_lag_from_the_restart_not_from_before_the_pause(twin_run):
    twin_tick(run_id=twin_run.pk, expected_seq=0)
    TwinRun.objects.filter(pk=twin_run.pk).update(
        last_tick_at=timezone.now() - timedelta(hours=2), status=TwinRun.Status.PAUSED
    )
    run = twin_run_control(run_id=twin_run.pk, action="start")
    assert tick_lag_seconds(run, timezone.now().timestamp()) == 0.0


@pytest.mark.django_db
def test_a_paused_runs_ticks_show_as_paused_not_down_on_the_status_page(
    twin_run, client_as, settings
):
    twin_tick(run_id=twin_run.pk, expected_seq=0)
    twin_run_control(run_id=twin_run.pk, action="pause")
    settings.HEARTBEAT_STALE_AFTER_SECONDS = 0  # any age counts as stale
    ticks = [s for s in heartbeat_statuses() if s.name == "scheduler:small"]
    assert ticks and ticks[0].state == "paused" and not ticks[0].alive
    page = client_as("operator").get("/status/?partial=1").content.decode()
    row = next(line for line in page.splitlines() if "scheduler:small" in line)
    assert "paused" in row and ">down<" not in row
    processes = client_as("operator").get("/api/v1/status/processes/").json()["processes"]
    assert next(p for p in processes if p["name"] == "scheduler:small")["state"] == "paused"


@pytest.mark.django_db
def test_the_next_tick_after_a_restart_shows_the_run_alive_again(twin_run):
    twin_tick(run_id=twin_run.pk, expected_seq=0)
    twin_run_control(run_id=twin_run.pk, action="pause")
    twin_run_control(run_id=twin_run.pk, action="start")
    twin_tick(run_id=twin_run.pk, expected_seq=1)
    tick = next(s for s in heartbeat_statuses() if s.name == "scheduler:small")
    assert tick.state == "alive"


@pytest.mark.django_db
def test_pausing_drops_the_lag_series_to_zero_so_the_lag_alert_resolves(twin_run):
    from telemetry.models import Sample
    from telemetry.read import cluster_series  # noqa: F401 (the read path the rule uses)

    twin_run_control(run_id=twin_run.pk, action="pause")
    last = (
        Sample.objects.filter(
            metric__name="twin_tick_lag_seconds", entity__cluster=twin_run.cluster
        )
        .order_by("-ts")
        .first()
    )
    assert last is not None and last.value == 0.0


@pytest.mark.django_db
def test_the_twin_page_says_paused_instead_of_a_growing_lag(twin_run, client_as):
    twin_tick(run_id=twin_run.pk, expected_seq=0)
    twin_run_control(run_id=twin_run.pk, action="pause")
    TwinRun.objects.filter(pk=twin_run.pk).update(last_tick_at=timezone.now() - timedelta(hours=1))
    page = client_as("operator").get("/twin/").content.decode()
    assert "— (paused)" in page
    assert 'class="bad"' not in page.split("small", 1)[1].split("</tr>", 1)[0]
