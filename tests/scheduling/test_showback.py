"""Showback from the scheduler's allocations (issue 32 item 4): card-hours per tenant ×
partition × node type per day and month, every request style counted right, clipped to the
month, reconciled with the ledger's measured card-seconds (the difference shown, "no measured
data" where there is none), tenant-scoped, bad months refused naming the problem."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.utils import timezone

from cost.models import LedgerHour, LedgerLine
from cost.scheduler_showback import scheduler_showback
from inventory.models import Accelerator, Cluster, HardwareModel, Node, Workload
from scheduling.models import SchedulerJob, SchedulerSource
from scheduling.selectors.showback import (
    PeriodError,
    allocation_by_day,
    month_period,
    month_totals,
)
from scheduling.services.sources import scheduler_source_create
from tests.access import ApiAccessCases, PageAccessCases

OCT = datetime(2026, 10, 1, tzinfo=UTC)
NOW = datetime(2026, 11, 15, tzinfo=UTC)


def at(day: int, hour: float = 0.0) -> datetime:
    return OCT + timedelta(days=day - 1, hours=hour)


def _source(name: str = "slurm-sb") -> SchedulerSource:
    model, _ = HardwareModel.objects.get_or_create(
        slug="h100", defaults=dict(name="H100", vendor="nvidia", hbm_bytes=80 << 30,
                                   hbm_bandwidth_bytes_per_s=3.35e12, peak_flops=9.9e14,
                                   tdp_watts=700, confidence="high"),
    )  # fmt: skip
    cluster, _ = Cluster.objects.get_or_create(
        name=name, defaults={"kind": "unified", "hardware_model": model}
    )
    node = Node.objects.create(cluster=cluster, hostname="gpu-001", hardware_model=model)
    for i in range(8):
        Accelerator.objects.create(node=node, index=i, vendor_id=f"GPU-{name}-{i}")
    return scheduler_source_create(
        cluster=cluster, base_url="http://slurm-sb.example.com:6820", user_name="slurmrest",
        token_env="SLURM_JWT_SB", enabled=False,
    )  # fmt: skip


def _job(source, tenant, job_id, *, start, end=None, partition="gpu", nodes=("gpu-001",),
         allocation=None, gpus=0, npus=0, state="COMPLETED", name=""):  # fmt: skip
    return SchedulerJob.objects.create(
        source=source, tenant=tenant, job_id=job_id, name=name or f"job-{job_id}",
        account=tenant.slug, partition=partition, state=state, nodes=list(nodes),
        allocation=allocation or [], gpus=gpus, npus=npus, submit_time=start,
        start_time=start, end_time=end, synced_at=timezone.now(),
    )  # fmt: skip


def _cards(node: str, n: int, name: str = "gpu") -> dict:
    return {"node": node, "cards": [{"name": name, "type": "h100", "indices": list(range(n))}]}


@pytest.mark.django_db
def test_a_job_spanning_midnight_splits_its_card_hours_across_the_days(users, tenants):
    source = _source()
    _job(source, tenants["acme"], 1, start=at(3, 22), end=at(4, 2), gpus=4,
         allocation=[_cards("gpu-001", 4)])  # fmt: skip
    rows = allocation_by_day(users["operator"], *month_period("2026-10"), now=NOW)
    assert [(r.day, r.card_hours, r.node_type) for r in rows] == [
        (date(2026, 10, 3), 8.0, "H100"), (date(2026, 10, 4), 8.0, "H100"),
    ]  # fmt: skip
    assert [(t.card_hours, t.jobs) for t in month_totals(rows)] == [(16.0, 1)]


@pytest.mark.django_db
def test_a_job_crossing_the_month_counts_only_its_hours_inside_the_month(users, tenants):
    source = _source()
    _job(source, tenants["acme"], 1, start=at(31, 23), end=at(32, 5), gpus=2)
    _job(source, tenants["acme"], 2, start=at(-1, 0), end=at(1, 1), gpus=1)
    rows = allocation_by_day(users["operator"], *month_period("2026-10"), now=NOW)
    assert {r.day: r.card_hours for r in rows} == {date(2026, 10, 31): 2.0, date(2026, 10, 1): 1.0}


@pytest.mark.django_db
def test_a_running_job_counts_up_to_now(users, tenants):
    source = _source()
    _job(source, tenants["acme"], 1, start=at(10, 12), state="RUNNING", gpus=2,
         allocation=[_cards("gpu-001", 2)])  # fmt: skip
    rows = allocation_by_day(users["operator"], *month_period("2026-10"), now=at(10, 15))
    assert [(r.day, r.card_hours) for r in rows] == [(date(2026, 10, 10), 6.0)]


@pytest.mark.django_db
def test_a_two_node_job_counts_each_nodes_cards_under_its_node_type(users, tenants):
    source = _source()
    # gpu-001 is an inventory H100 node; gpu-777 is not in the inventory: unknown.
    _job(source, tenants["acme"], 1, start=at(5, 0), end=at(5, 1), nodes=("gpu-001", "gpu-777"),
         gpus=8, allocation=[_cards("gpu-001", 4), _cards("gpu-777", 4)])  # fmt: skip
    rows = allocation_by_day(users["operator"], *month_period("2026-10"), now=NOW)
    assert sorted((r.node_type, r.card_hours) for r in rows) == [("H100", 4.0), ("unknown", 4.0)]


@pytest.mark.django_db
def test_finished_jobs_count_their_cards_whatever_the_request_style(users, tenants):
    """A finished job's allocation detail is gone; its ``gpus`` is what the sync counted from
    the request: ``--gpus=3`` per job stays 3, ``--gres=gpu:2`` on two nodes is 4 (spread over
    the nodes), and NPUs count as cards too."""
    source = _source()
    acme = tenants["acme"]
    _job(source, acme, 1, start=at(6, 0), end=at(6, 1), gpus=3, partition="a")  # --gpus=3
    _job(source, acme, 2, start=at(6, 0), end=at(6, 1), gpus=4, partition="b",
         nodes=("gpu-001", "gpu-002"))  # --gres=gpu:2 -N2  # fmt: skip
    _job(source, acme, 3, start=at(6, 0), end=at(6, 1), npus=8, partition="c")
    rows = allocation_by_day(users["operator"], *month_period("2026-10"), now=NOW)
    by_partition = {}
    for r in rows:
        by_partition[r.partition] = by_partition.get(r.partition, 0.0) + r.card_hours
    assert by_partition == {"a": 3.0, "b": 4.0, "c": 8.0}
    assert sorted((r.node_type, r.card_hours) for r in rows if r.partition == "b") == [
        ("H100", 2.0), ("unknown", 2.0),
    ]  # fmt: skip


@pytest.mark.django_db
def test_a_customer_sees_only_its_own_tenants_card_hours(users, tenants):
    source = _source()
    _job(source, tenants["acme"], 1, start=at(2, 0), end=at(2, 1), gpus=1)
    _job(source, tenants["panda"], 2, start=at(2, 0), end=at(2, 1), gpus=5)
    period = month_period("2026-10")
    assert {r.tenant for r in allocation_by_day(users["customer"], *period, now=NOW)} == {"acme"}
    assert {r.tenant for r in allocation_by_day(users["operator"], *period, now=NOW)} == {
        "acme", "panda",
    }  # fmt: skip


@pytest.mark.parametrize("text", ["2026-13", "2026-1", "October", "", "2026-10-01"])
def test_a_bad_month_is_refused_naming_the_value(text):
    with pytest.raises(PeriodError) as refused:
        month_period(text)
    assert "month" in str(refused.value)


def test_a_month_period_is_the_whole_utc_month():
    assert month_period("2026-12") == (
        datetime(2026, 12, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC),
    )  # fmt: skip


def _ledger(cluster, tenant, hour: datetime, card_seconds: float, basis: str = "measured"):
    workload, _ = Workload.objects.get_or_create(
        cluster=cluster, name=f"{tenant.slug}-train",
        defaults={"tenant": tenant, "kind": "training", "cards_requested": 4},
    )  # fmt: skip
    row = LedgerHour.objects.create(
        cluster=cluster, hour=hour, currency="EUR", cards=8, per_hour=10.0,
        covered_seconds=3600, capacity_card_seconds=8 * 3600, held_card_seconds=card_seconds,
        cost_cents=1000, billed_cents=400, idle_cents=600, closed_at=hour + timedelta(hours=1),
    )  # fmt: skip
    LedgerLine.objects.create(
        hour=row, workload=workload, tenant=tenant, workload_name=workload.name, basis=basis,
        card_seconds=card_seconds, billed_cents=400,
    )  # fmt: skip


@pytest.mark.django_db
def test_each_tenant_day_shows_the_difference_from_the_measured_card_hours(users, tenants):
    source = _source()
    acme, panda = tenants["acme"], tenants["panda"]
    _job(source, acme, 1, start=at(7, 10), end=at(7, 12), gpus=4)  # 8 card-hours allocated
    _ledger(source.cluster, acme, at(7, 10), 3 * 3600.0)  # 3 measured
    _ledger(source.cluster, acme, at(7, 11), 2 * 3600.0)  # + 2 measured
    _job(source, panda, 2, start=at(7, 10), end=at(7, 11), gpus=2)  # no measured data
    found = scheduler_showback(users["operator"], *month_period("2026-10"), now=NOW)
    rows = {(r.tenant, r.day): r for r in found.reconciliation}
    acme_day = rows[("acme", date(2026, 10, 7))]
    assert acme_day.allocated_card_hours == pytest.approx(8.0)
    assert acme_day.measured_card_hours == pytest.approx(5.0)
    assert acme_day.difference_card_hours == pytest.approx(3.0)
    assert acme_day.bases == ("measured",)
    panda_day = rows[("panda", date(2026, 10, 7))]
    assert panda_day.allocated_card_hours == pytest.approx(2.0)
    assert panda_day.measured_card_hours is None and panda_day.difference_card_hours is None
    # A day with nothing allocated or measured has no row; a measured day without jobs has
    # one, with its whole measured time as the (negative) difference.
    _ledger(source.cluster, acme, at(9, 3), 3600.0)
    found = scheduler_showback(users["operator"], *month_period("2026-10"), now=NOW)
    nine = [r for r in found.reconciliation if r.day == date(2026, 10, 9)]
    assert [(r.tenant, r.difference_card_hours) for r in nine] == [("acme", pytest.approx(-1.0))]
    assert not [r for r in found.reconciliation if r.day == date(2026, 10, 8)]


@pytest.mark.django_db
def test_a_request_based_ledger_estimate_is_not_counted_as_measured(users, tenants):
    source = _source()
    _job(source, tenants["acme"], 1, start=at(7, 10), end=at(7, 11), gpus=4)
    _ledger(source.cluster, tenants["acme"], at(7, 10), 4 * 3600.0, basis="requested")
    found = scheduler_showback(users["operator"], *month_period("2026-10"), now=NOW)
    (row,) = found.reconciliation
    assert row.measured_card_seconds is None
    assert row.estimated_card_seconds == pytest.approx(4 * 3600.0)


class TestSchedulerShowbackPageAccess(PageAccessCases):
    route = "scheduler-showback"
    url = "/scheduler/showback/?month=2026-10"


class TestSchedulerShowbackApiAccess(ApiAccessCases):
    route = "api:scheduler-showback"
    url = "/api/v1/scheduler/showback/?month=2026-10"

    def list_markers(self, users, tenants) -> list[str]:
        source = _source("slurm-sb-api")
        _job(source, tenants["acme"], 1, start=at(3, 1), end=at(3, 2), gpus=1,
             partition="acme-part")  # fmt: skip
        _job(source, tenants["panda"], 2, start=at(3, 1), end=at(3, 2), gpus=1,
             partition="panda-secret-partition")  # fmt: skip
        return ["panda-secret-partition"]


@pytest.mark.django_db
def test_the_api_answers_days_totals_and_the_reconciliation(client_as, tenants):
    source = _source()
    _job(source, tenants["acme"], 1, start=at(3, 23), end=at(4, 1), gpus=2)
    body = client_as("customer").get("/api/v1/scheduler/showback/?month=2026-10").json()
    assert body["month"] == "2026-10"
    assert [(d["day"], d["card_hours"]) for d in body["days"]] == [
        ("2026-10-03", 2.0), ("2026-10-04", 2.0),
    ]  # fmt: skip
    assert [t["card_hours"] for t in body["month_totals"]] == [4.0]
    assert [r["measured_card_hours"] for r in body["reconciliation"]] == [None, None]


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["month=2026-13", "month=oct", "colour=blue"])
def test_a_bad_month_or_parameter_is_a_400_naming_it(client_as, users, query):
    answer = client_as("operator").get(f"/api/v1/scheduler/showback/?{query}")
    assert answer.status_code == 400
    assert query.split("=")[0] in answer.content.decode()
    page = client_as("operator").get(f"/scheduler/showback/?{query}")
    assert page.status_code == 400 and query.split("=")[0] in page.content.decode()


@pytest.mark.django_db
def test_the_page_shows_the_month_and_downloads_both_tables(client_as, tenants):
    source = _source()
    _job(source, tenants["acme"], 1, start=at(3, 1), end=at(3, 3), gpus=2, partition="train")
    client = client_as("customer")
    page = client.get("/scheduler/showback/?month=2026-10").content.decode()
    assert 'type="month"' in page and "train" in page and "no measured data" in page
    allocation = client.get("/scheduler/showback/?month=2026-10&download=allocation")
    assert allocation["Content-Type"].startswith("text/csv")
    lines = allocation.content.decode().splitlines()
    assert lines[0].startswith("day,cluster,tenant,partition,node_type,card_hours")
    assert lines[1].startswith("2026-10-03,slurm-sb,acme,train,H100,4.0")
    reconciliation = client.get("/scheduler/showback/?month=2026-10&download=reconciliation")
    assert "allocated_card_hours" in reconciliation.content.decode().splitlines()[0]
