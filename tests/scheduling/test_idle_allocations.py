"""Allocated but idle (issue 32 item 3): a running job whose cards' measured utilization stays
under the threshold for at least the configured duration is listed with how long and how many
idle card-hours; busy cards, short lulls and cards without data are not idle; the thresholds
are settings; the scheduler page and the API show the list, customers only their own."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduling.models import SchedulerJob
from scheduling.selectors.idle import idle_allocations
from telemetry.models import MetricDefinition
from telemetry.receivers.twin import samples_write
from tests.access import ApiAccessCases
from tests.scheduling.holdings import job, site, store

pytestmark = pytest.mark.django_db
STEP = 60  # one utilization sample a minute


def _utilization(entity, values: list[float], end) -> None:
    """One sample a minute, the last at ``end``."""
    metric = MetricDefinition.objects.get(name="accelerator_utilization_ratio")
    last = end.timestamp()
    rows = [
        (metric.pk, entity.pk, last - STEP * (len(values) - 1 - i), v) for i, v in enumerate(values)
    ]
    samples_write(rows)


def _cluster_with_jobs(tenants):
    """Job 1 (acme): card 0 idle for 40 min, card 1 busy. Job 2 (panda): idle 20 min only.
    Job 3 (acme): busy. Job 4 (panda): idle for 45 min on two cards."""
    s = site(tenants)
    now = timezone.now().replace(microsecond=0)
    start = now - timedelta(minutes=50)
    store(s.source, [
        job(1, cards={"gpu-001": [0, 1]}, start=start),
        job(2, account="tenant-b", cards={"gpu-001": [2]}, start=start),
        job(3, cards={"gpu-001": [3]}, start=start),
        job(4, account="tenant-b", cards={"gpu-002": [0, 1]}, start=start),
    ], now)  # fmt: skip
    e = s.entities
    _utilization(e[("gpu-001", 0)], [0.9] * 10 + [0.01] * 41, now)
    _utilization(e[("gpu-001", 1)], [0.9] * 51, now)
    _utilization(e[("gpu-001", 2)], [0.9] * 30 + [0.0] * 21, now)
    _utilization(e[("gpu-001", 3)], [0.6] * 51, now)
    _utilization(e[("gpu-002", 0)], [0.5] * 5 + [0.02] * 46, now)
    _utilization(e[("gpu-002", 1)], [0.5] * 5 + [0.02] * 46, now)
    return s, now


def test_jobs_whose_cards_stay_under_the_threshold_long_enough_are_listed(tenants):
    _s, now = _cluster_with_jobs(tenants)
    report = idle_allocations(SchedulerJob.objects.all(), now=now)
    listed = {row.job.job_id: row for row in report.jobs}
    assert list(listed) == [4, 1]  # most idle card-hours first; 2 (20 min) and 3 (busy) not
    four, one = listed[4], listed[1]
    assert (four.cards_held, four.cards_idle) == (2, 2)
    assert four.idle_card_hours == pytest.approx(2 * 45 / 60, abs=0.05)
    assert (one.cards_held, one.cards_idle, one.cards) == (2, 1, ["gpu-001/gpu0"])
    # 41 readings a minute apart, the newest at "now": idle for the last 40 minutes.
    assert abs(one.longest_idle - timedelta(minutes=40)) <= timedelta(minutes=1)
    assert abs(one.idle_since - (now - timedelta(minutes=40))) <= timedelta(minutes=1)
    assert [(t.tenant.slug, t.jobs, t.cards_idle) for t in report.tenants] == [
        ("panda", 1, 2),
        ("acme", 1, 1),
    ]


def test_the_thresholds_are_settings(tenants, settings):
    _s, now = _cluster_with_jobs(tenants)
    settings.SCHEDULER_IDLE_MINUTES = 15
    assert {r.job.job_id for r in idle_allocations(SchedulerJob.objects.all(), now=now).jobs} == {
        1, 2, 4,
    }  # fmt: skip
    settings.SCHEDULER_IDLE_UTILIZATION_PERCENT = 1  # 2 % is no longer idle
    assert {r.job.job_id for r in idle_allocations(SchedulerJob.objects.all(), now=now).jobs} == {
        2,
    }


def test_cards_without_utilization_data_are_unmeasured_not_idle(tenants):
    s = site(tenants)
    now = timezone.now()
    store(s.source, [job(8, cards={"gpu-002": [3]}, start=now - timedelta(hours=2))], now)
    report = idle_allocations(SchedulerJob.objects.all(), now=now)
    assert report.jobs == [] and report.jobs_checked == 1


def test_a_job_that_ended_is_not_listed(tenants):
    s, now = _cluster_with_jobs(tenants)
    store(s.source, [job(4, account="tenant-b", state="CANCELLED", cards={"gpu-002": [0, 1]},
                         start=now - timedelta(minutes=50), end=now)], now)  # fmt: skip
    assert 4 not in {
        r.job.job_id for r in idle_allocations(SchedulerJob.objects.all(), now=now).jobs
    }


def test_the_scheduler_page_shows_the_idle_list_to_its_tenant_only(client_as, tenants):
    _cluster_with_jobs(tenants)
    page = client_as("operator").get("/scheduler/").content.decode()
    assert 'id="idle"' in page and "job-4" in page and "job-1" in page
    assert "under 5% for at least 30 min" in page
    acme = client_as("customer").get("/scheduler/").content.decode()
    idle = acme[acme.index('id="idle"') :]
    assert "job-1" in idle and "job-4" not in idle and "Panda" not in idle


class TestSchedulerIdleAccess(ApiAccessCases):
    route = "api:scheduler-idle"
    url = "/api/v1/scheduler-idle/"

    def list_markers(self, users, tenants) -> list[str]:
        _cluster_with_jobs(tenants)
        return ["job-4"]


def test_the_api_answers_durations_and_idle_card_hours(client_as, tenants):
    _cluster_with_jobs(tenants)
    body = client_as("operator").get("/api/v1/scheduler-idle/").json()
    assert body["rule"] == {"utilization_under_ratio": 0.05, "minutes": 30}
    first = body["jobs"][0]
    assert (first["job_id"], first["tenant"], first["cards_idle"]) == (4, "panda", 2)
    assert first["longest_idle_minutes"] == pytest.approx(45, abs=1)
    assert first["idle_card_hours"] == pytest.approx(1.5, abs=0.05)
    assert [t["tenant"] for t in body["tenants"]] == ["panda", "acme"]


def test_the_api_reads_a_few_queries_whatever_the_number_of_jobs(
    client_as, tenants, django_assert_max_num_queries
):
    s, now = _cluster_with_jobs(tenants)
    # Eight more idle jobs on the other cards: the count of queries must not grow with them.
    start = now - timedelta(minutes=50)
    store(s.source, [
        job(1, cards={"gpu-001": [0, 1]}, start=start),
        job(2, account="tenant-b", cards={"gpu-001": [2]}, start=start),
        job(3, cards={"gpu-001": [3]}, start=start),
        job(4, account="tenant-b", cards={"gpu-002": [0, 1]}, start=start),
        *[job(10 + i, cards={"gpu-002": [2 + i]}, start=start) for i in range(2)],
    ], now)  # fmt: skip
    for i in range(2):
        _utilization(s.entities[("gpu-002", 2 + i)], [0.01] * 51, now)
    client = client_as("operator")
    with django_assert_max_num_queries(16):
        body = client.get("/api/v1/scheduler-idle/").json()
    assert {j["job_id"] for j in body["jobs"]} == {1, 4, 10, 11}
