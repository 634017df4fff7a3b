"""The overview's day/night curve on a scheduler-fed cluster (issue 32 item 7): allocated vs
busy cards by hour of day, training vs inference, from the scheduler's attribution intervals
× the cards' measured utilization, labelled with its source and its classification rule;
twin clusters keep the twin's curve; customers see neither (the overview is staff-only)."""

# ruff: noqa: F811 (pytest fixtures imported from dashboards_fixtures are used as arguments)
from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.utils import timezone

from accounts.models import Tenant
from dashboards.selectors.day_night import job_class, scheduler_day_night
from telemetry.models import MetricDefinition
from telemetry.receivers.twin import samples_write
from tests.access import ApiAccessCases, PageAccessCases
from tests.dashboards.dashboards_fixtures import twin_cluster  # noqa: F401
from tests.scheduling.holdings import job, site, store

pytestmark = pytest.mark.django_db
HOUR = timedelta(hours=1)


def _utilization(entity, value: float, start, end) -> None:
    metric = MetricDefinition.objects.get(name="accelerator_utilization_ratio")
    first, last = int(start.timestamp()), int(end.timestamp())
    samples_write([(metric.pk, entity.pk, float(t), value) for t in range(first, last, 60)])


def _scheduler_cluster(tenants):
    """Three whole hours: training job 1 holds two cards throughout (utilization 0.5 and
    1.0); inference job 2 holds one card (0.8) from the second hour on."""
    s = site(tenants)
    end = timezone.now().replace(minute=0, second=0, microsecond=0)
    start = end - 3 * HOUR
    serving = job(2, account="tenant-b", cards={"gpu-002": [0]}, start=start + HOUR)
    serving.partition = "inference-online"
    store(s.source, [job(1, cards={"gpu-001": [0, 1]}, start=start), serving], end)
    _utilization(s.entities[("gpu-001", 0)], 0.5, start, end)
    _utilization(s.entities[("gpu-001", 1)], 1.0, start, end)
    _utilization(s.entities[("gpu-002", 0)], 0.8, start, end)
    return s, start, end


def _query(start, end, **more) -> str:
    return urlencode({"start": start.isoformat(), "end": end.isoformat(), **more})


def test_partitions_naming_inference_class_their_jobs_as_inference():
    words = ("infer", "serving")
    assert job_class("Inference-A", words) == "inference"
    assert job_class("llm-serving", words) == "inference"
    assert job_class("train", words) == job_class("", words) == "training"


def test_allocated_and_busy_cards_by_hour_of_day_come_from_the_scheduler(tenants):
    s, start, end = _scheduler_cluster(tenants)
    curve = scheduler_day_night(s.cluster, start, end)
    assert curve is not None and curve.source_kind == "slurm"
    hours = [(start + n * HOUR).astimezone(timezone.get_current_timezone()).hour for n in range(3)]
    for n, hour in enumerate(hours):
        assert curve.by_hour_allocated["training"][hour] == pytest.approx(2.0)
        assert curve.by_hour_busy["training"][hour] == pytest.approx(1.5)
        assert curve.by_hour_allocated["inference"][hour] == pytest.approx(0.0 if n == 0 else 1.0)
        assert curve.by_hour_busy["inference"][hour] == pytest.approx(0.0 if n == 0 else 0.8)
    # Hours of the day the range does not reach have no value (not zero).
    assert sum(v is None for v in curve.by_hour_allocated["training"]) == 21
    assert curve.unmeasured_card_hours == pytest.approx(0.0)
    assert curve.allocated["training"] == pytest.approx([2.0, 2.0, 2.0])


def test_a_held_card_without_a_reading_is_allocated_but_not_busy(tenants):
    s = site(tenants)
    end = timezone.now().replace(minute=0, second=0, microsecond=0)
    store(s.source, [job(1, cards={"gpu-001": [3]}, start=end - HOUR)], end)
    curve = scheduler_day_night(s.cluster, end - HOUR, end)
    assert curve.allocated["training"] == pytest.approx([1.0])
    assert curve.busy["training"] == pytest.approx([0.0])
    assert curve.unmeasured_card_hours == pytest.approx(1.0)


def test_the_overview_draws_the_schedulers_curve_and_says_where_it_comes_from(tenants, client_as):
    s, start, end = _scheduler_cluster(tenants)
    body = (
        client_as("operator")
        .get(f"/api/v1/dashboards/overview/?{_query(start, end, cluster=s.cluster.name)}")
        .json()
    )
    figure = body["figures"]["day_night"]
    assert "Slurm" in figure["layout"]["title"]["text"]
    names = [trace["name"] for trace in figure["data"]]
    assert names == [
        "training, allocated", "training, busy", "inference, allocated", "inference, busy"
    ]  # fmt: skip
    assert max(v or 0 for v in figure["data"][1]["y"]) == pytest.approx(1.5)
    assert "Slurm" in body["figures"]["cards"]["layout"]["title"]["text"]
    training = [y for y in body["figures"]["cards"]["data"][0]["y"] if y is not None]
    assert training and training[-1] == pytest.approx(2.0)
    about = body["day_night"]
    assert about["source"] == "slurm" and "infer" in about["inference_words"]
    assert "partition or queue" in about["classification"]
    csv = client_as("operator").get(
        f"/api/v1/dashboards/overview/?{_query(start, end, cluster=s.cluster.name)}"
        "&format=csv&table=day_night"
    )
    assert csv.status_code == 200 and b"training_busy_cards" in csv.content
    page = client_as("operator").get(f"/dashboards/?cluster={s.cluster.name}").content.decode()
    assert 'data-chart-key="day_night"' in page and "SCHEDULER_INFERENCE_PARTITIONS" in page


def test_a_twin_cluster_keeps_the_twins_curve_labelled_as_such(client_as, twin_cluster):
    body = client_as("operator").get("/api/v1/dashboards/overview/?range=1h").json()
    assert body["day_night"] is None and "day_night" not in body["figures"]
    assert "from the twin" in body["figures"]["cards"]["layout"]["title"]["text"]
    page = client_as("operator").get("/dashboards/").content.decode()
    assert 'data-chart-key="day_night"' not in page


def _tenants() -> dict:
    return {t: Tenant.objects.get(slug=t) for t in ("acme", "panda")}


class TestSchedulerOverviewAccess(ApiAccessCases):
    """Customers get no overview of a scheduler-fed cluster, theirs or not (staff only)."""

    route = "api:dashboard-overview"
    allowed_roles = ("operator", "approver")

    def get_url(self, users) -> str:
        s = site(_tenants())
        store(
            s.source, [job(1, cards={"gpu-001": [0]}, start=timezone.now() - HOUR)], timezone.now()
        )
        return f"/api/v1/dashboards/overview/?cluster={s.cluster.name}"


class TestSchedulerOverviewPageAccess(PageAccessCases):
    route = "dashboard-overview"
    allowed_roles = ("operator", "approver")

    def get_url(self, users) -> str:
        return f"/dashboards/?cluster={site(_tenants()).cluster.name}"
