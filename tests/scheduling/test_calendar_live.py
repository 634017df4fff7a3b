"""The day/night calendar applied to the run's real Slurm 22.05 (never mocked): the night
calendar defers a pending training job and the read-back confirms it, the DAILY reservation
of the inference nodes is created by scontrol and read back, a job submitted afterwards is
deferred by the follow-up (once); a token without operator rights
makes the calendar say it cannot apply, and nothing changes on the scheduler."""

from __future__ import annotations

import subprocess
import time

import pytest

from inventory.models import Cluster
from scheduling.calendar.slurm import reservation_name
from scheduling.models_calendar import CalendarApplication, WindowCalendar
from scheduling.services.calendar import calendar_apply, calendar_approve, calendar_request
from scheduling.services.calendar_follow import calendar_deferrals_follow
from scheduling.services.sources import scheduler_account_mapping_create, scheduler_source_create
from scheduling.services.sync import scheduler_source_sync
from tests.scheduling.calendar_fixtures import actor, day_around_now

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
TOKEN_ENV = "PORTAL_TEST_SLURM_CALENDAR_JWT"


def _source(slurm, tenants, *, name: str, user_name: str, token: str, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, token)
    cluster = Cluster.objects.create(name=name, kind=Cluster.Kind.UNIFIED)
    for account, tenant in (("tenant-a", "acme"), ("tenant-b", "panda")):
        scheduler_account_mapping_create(cluster=cluster, account=account, tenant=tenants[tenant])
    source = scheduler_source_create(
        cluster=cluster, base_url=slurm.url, user_name=user_name, token_env=TOKEN_ENV,
        timeout_seconds=20,
    )  # fmt: skip
    scheduler_source_sync(source=source)  # the partitions' nodes, as an operator would have
    return source


@pytest.fixture
def busy(slurm):
    """Both nodes' cards held by a running job, and a training job of tenant-b pending."""
    # Mapped accounts only: the run shares one Slurm, and a job of an unmapped account (even
    # cancelled: slurmctld keeps it MinJobAge) would be counted by other tests' syncs.
    running = slurm.sbatch(
        "-p", "train", "-A", "tenant-a", "-N2", "--gres=gpu:h100:4", "--wrap", "sleep 600"
    )
    slurm.wait_state(running, {"RUNNING"})
    pending = slurm.sbatch(
        "-p", "train", "-A", "tenant-b", "--gres=gpu:h100:2", "--wrap", "sleep 60"
    )  # fmt: skip
    slurm.wait_state(pending, {"PENDING"})
    yield running, pending
    for job in (running, pending):
        slurm.scancel(job)


def _eligible(slurm, job_id: int) -> int:
    return slurm.get(f"/slurm/v0.0.38/job/{job_id}")["jobs"][0]["eligible_time"]


def _reservations(slurm) -> list[str]:
    return [r["name"] for r in slurm.get("/slurm/v0.0.38/reservations")["reservations"]]


def _revision(cluster, slurm, users):
    day_start, day_end = day_around_now()
    revision = calendar_request(
        cluster=cluster, actor=actor(users["operator"]), reason="day for inference",
        day_start=day_start, day_end=day_end, inference_partition="infer",
        inference_accounts=["tenant-a"], training_partitions=["train"], defer_min_cards=2,
        slurm_conf=str(slurm.root / "etc" / "slurm.conf"),
    )  # fmt: skip
    calendar_approve(cluster=cluster, actor=actor(users["approver"]), expected_revision=1)
    return revision


def test_the_night_calendar_defers_a_pending_job_and_the_read_back_confirms_it(
    slurm, tenants, users, settings, monkeypatch, busy
):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    running, pending = busy
    operator_token = slurm._run("scontrol", "token", "username=root", "lifespan=3600")
    source = _source(
        slurm, tenants, name="slurm-cal", user_name="root", monkeypatch=monkeypatch,
        token=operator_token.strip().removeprefix("SLURM_JWT="),
    )  # fmt: skip
    cluster = source.cluster
    before = _eligible(slurm, pending)
    _revision(cluster, slurm, users)
    name = reservation_name(cluster.name)
    try:
        application = calendar_apply(
            cluster=cluster, actor=actor(users["operator"]), expected_revision=1
        )
        assert application.outcome == CalendarApplication.Outcome.CONFIRMED, application.message
        steps = {s["kind"]: s for s in application.steps}
        reservation = steps["reservation"]
        assert reservation["ok"] and reservation["confirmed"] == reservation["asked"]
        assert reservation["confirmed"]["nodes"] == ["gpu-001"]  # the infer partition, synced
        assert reservation["confirmed"]["flags"] == ["DAILY", "IGNORE_JOBS", "MAGNETIC"]
        defers = [s for s in application.steps if s["kind"] == "defer"]
        assert [s["target"] for s in defers] == [str(pending)]  # not the running job
        asked_begin = defers[0]["asked"]["begin"]
        assert asked_begin > time.time() + 3000  # the night starts two hours from now
        # What the scheduler itself says, outside the portal's read-back:
        assert abs(_eligible(slurm, pending) - asked_begin) <= 120
        assert _eligible(slurm, pending) != before
        assert name in _reservations(slurm)
        assert WindowCalendar.objects.get(cluster=cluster).applied.number == 1
        assert list(
            WindowCalendar.objects.get(cluster=cluster)
            .audit_entries.order_by("id").values_list("action", flat=True)
        ) == ["request", "approve", "apply", "apply_confirmed"]  # fmt: skip
        # A training job submitted after the application is deferred by the follow-up.
        later = slurm.sbatch(
            "-p", "train", "-A", "tenant-b", "--gres=gpu:h100:2", "--wrap", "sleep 60"
        )  # fmt: skip
        try:
            slurm.wait_state(later, {"PENDING"})
            assert calendar_deferrals_follow() == {"deferred": 1, "failed": 0}
            assert abs(_eligible(slurm, later) - asked_begin) <= 120
            assert calendar_deferrals_follow() == {"deferred": 0, "failed": 0}  # once
        finally:
            slurm.scancel(later)
    finally:
        subprocess.run(
            ["scontrol", "delete", f"ReservationName={name}"], env=slurm.env,
            capture_output=True, timeout=20, check=False,
        )  # fmt: skip


def test_a_token_without_operator_rights_makes_the_calendar_say_it_cannot_apply(
    slurm, tenants, users, settings, monkeypatch, busy
):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    _running, pending = busy
    # slurmrest is an ordinary user: it may read every job but update none of root's.
    source = _source(
        slurm, tenants, name="slurm-cal-user", user_name="slurmrest", token=slurm.token,
        monkeypatch=monkeypatch,
    )  # fmt: skip
    cluster = source.cluster
    before = _eligible(slurm, pending)
    _revision(cluster, slurm, users)
    application = calendar_apply(
        cluster=cluster, actor=actor(users["operator"]), expected_revision=1
    )
    assert application.outcome == CalendarApplication.Outcome.REFUSED
    assert "AdminLevel=Operator" in application.message
    assert application.steps == []
    assert _eligible(slurm, pending) == before  # nothing changed on the scheduler
    assert reservation_name(cluster.name) not in _reservations(slurm)
    assert WindowCalendar.objects.get(cluster=cluster).applied is None
