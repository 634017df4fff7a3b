"""Authoring defaults that work, and a form that offers what the plan may move (issue 24,
part 3).

The bug replayed: a plan built with the page's defaults (60 s window, at least 3 values,
0 inconclusive allowed, 20 s initial delay) paused on its first measurement with "2 of 3",
with one value per telemetry interval; the form offered every tenant's workloads, finished
jobs included.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

import pytest

from inventory.models import Workload
from rollout.models import AnalysisRun, Criterion, MigrationPlan
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.authoring import analysis_defaults
from rollout.services.transitions import plan_start
from telemetry.families.serving import bucket_metric
from telemetry.models import Entity, EntityKind, MetricDefinition
from telemetry.receivers.twin import serving_catalogue_ensure
from tests.rollout.conftest import write
from tests.rollout.test_authoring import body

TTFT = "serving_ttft_seconds"


def offered(page: str) -> set[int]:
    """The workload ids the pilot and gray lists offer."""
    found: set[int] = set()
    for field in ("pilot", "gray"):
        select = re.search(rf'<select name="{field}".*?</select>', page, re.S)
        if select:
            found |= {int(v) for v in re.findall(r'<option value="(\d+)"', select.group(0))}
    return found


def test_defaults_follow_the_telemetry_interval(settings):
    settings.TELEMETRY_INTERVAL_SECONDS = 10
    d = analysis_defaults()
    assert (d.min_samples, d.initial_delay_seconds, d.window_seconds) == (3, 40, 80)
    assert (d.interval_seconds, d.inconclusive_limit) == (20, 1)
    settings.TELEMETRY_INTERVAL_SECONDS = 30
    d = analysis_defaults()
    assert (d.initial_delay_seconds, d.window_seconds, d.interval_seconds) == (120, 240, 60)
    # The first measurement comes after enough telemetry intervals for the minimum, plus one.
    assert d.initial_delay_seconds >= (d.min_samples + 1) * d.telemetry_interval_seconds


def test_the_first_measurement_of_a_healthy_step_passes_with_the_pages_defaults(
    client_as, workloads, clusters, settings
):
    settings.TELEMETRY_INTERVAL_SECONDS = 10
    batch = workloads["legacy:acme-batch"]
    batch.slo_ttft_ms = 800
    batch.save()
    response = client_as("operator").post(
        "/api/v1/plans/", body(workloads), content_type="application/json"
    )
    assert response.status_code == 201, response.content
    plan = MigrationPlan.objects.get()
    plan_start(plan_id=plan.pk, actor=Actor(plan.created_by))
    run = AnalysisRun.objects.get()
    t = run.traffic_at
    # One scrape of the workload's serving counters per telemetry interval, each stamped just
    # before its tick ends: 20 requests per interval, every TTFT in (0.25, 0.5], none failed.
    names = [bucket_metric(TTFT, le) for le in (0.25, 0.5, math.inf)]
    names += ["serving_requests_success_total", "serving_requests_failed_total"]
    serving_catalogue_ensure(set(names))
    for k in range(1, 12):
        stamp = t + timedelta(seconds=10 * k - 1)
        for name, value in zip(names, (0, 20 * k, 20 * k, 20 * k, 0), strict=True):
            write(clusters["unified"], "acme-batch", stamp, value, name)
    first = min(run.metrics.values_list("next_at", flat=True))
    analysis_run_step(run_id=run.pk, now=first)
    run.refresh_from_db()
    outcomes = {m.name: m.measurements.get().outcome for m in run.metrics.all()}
    assert outcomes == {"acme-batch-ttft-p99": "successful", "acme-batch-errors": "successful"}
    assert run.status == "running"  # count 5: more to come, no pause
    plan.refresh_from_db()
    assert plan.state == "running"


def test_template_criteria_carry_the_derived_settings(client_as, workloads, settings):
    settings.TELEMETRY_INTERVAL_SECONDS = 10
    response = client_as("operator").post(
        "/api/v1/plans/", body(workloads), content_type="application/json"
    )
    assert response.status_code == 201, response.content
    settings_used = set(
        Criterion.objects.values_list(
            "window_seconds",
            "min_samples",
            "initial_delay_seconds",
            "interval_seconds",
            "inconclusive_limit",
        )
    )
    assert settings_used == {(80, 3, 40, 20, 1)}


@pytest.fixture
def crowd(clusters, tenants, workloads):
    """Another tenant's job on the source and a finished job of acme's."""
    panda = Workload.objects.create(
        tenant=tenants["panda"], cluster=clusters["legacy"], name="panda-job", kind="training"
    )
    done = Workload.objects.create(
        tenant=tenants["acme"], cluster=clusters["legacy"], name="acme-done", kind="training"
    )
    running = Workload.objects.create(
        tenant=tenants["acme"], cluster=clusters["legacy"], name="acme-running", kind="training"
    )
    MetricDefinition.objects.get_or_create(
        name="training_state", defaults={"entity_kind": "workload"}
    )
    from django.utils import timezone

    for workload, state in ((done, 3.0), (running, 2.0)):
        Entity.objects.create(
            cluster=clusters["legacy"], kind=EntityKind.WORKLOAD, key=workload.name,
            workload=workload, tenant=tenants["acme"],
        )  # fmt: skip
        write(clusters["legacy"], workload.name, timezone.now(), state, "training_state")
    return {"panda": panda, "done": done, "running": running}


def test_the_form_offers_only_the_chosen_tenants_unfinished_workloads_on_the_source(
    client_as, workloads, clusters, tenants, crowd
):
    client = client_as("operator")
    # Nothing to choose from before the tenant and the source cluster are chosen.
    assert offered(client.get("/migrations/new/").content.decode()) == set()
    query = f"?tenant={tenants['acme'].pk}&source_cluster={clusters['legacy'].pk}"
    listed = offered(client.get("/migrations/new/" + query).content.decode())
    # acme's on the source, unfinished — not panda's, not the finished job, not the target's
    assert listed == {
        workloads["legacy:acme-batch"].pk,
        workloads["legacy:acme-chat"].pk,
        crowd["running"].pk,
    }


def test_posting_another_tenants_workload_is_refused_by_the_form(
    client_as, clusters, tenants, crowd
):
    response = client_as("operator").post(
        "/migrations/new/",
        {
            "tenant": tenants["acme"].pk,
            "name": "sneaky",
            "source_cluster": clusters["legacy"].pk,
            "target_cluster": clusters["unified"].pk,
            "pilot": [crowd["panda"].pk],
            "gray_steps": "5, 25, 50, 100",
            "interval_seconds": 20,
            "count": 5,
            "required_approvals": 2,
        },
    )
    assert response.status_code == 200  # the form again, with the error
    assert "valid choice" in response.content.decode()
    assert not MigrationPlan.objects.exists()
