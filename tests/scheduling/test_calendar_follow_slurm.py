"""The Slurm calendar's deferral repeats for jobs submitted on later days, on slurmrestd
v0.0.38's recorded job list (``fixtures/slurm/jobs-v0.0.38.json``, from the real Slurm of
``../shared/slurm``) behind a fake that keeps each job's ``eligible_time`` as Slurm would.
Repeating the follow-up defers nothing twice, a worker killed between sending and recording
leaves a lease that expires and no second deferral, and nothing is asked at night."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import pytest

from inventory.models import Cluster
from scheduling.models import SchedulerSource
from scheduling.models_calendar import CalendarApplication, WindowCalendar
from scheduling.services import calendar_follow
from scheduling.services.calendar import calendar_approve, calendar_request
from scheduling.services.calendar_follow import calendar_deferrals_follow
from scheduling.services.sources import scheduler_source_create
from scheduling.slurm.client import SchedulerError
from tests.scheduling.calendar_fixtures import actor

pytestmark = pytest.mark.django_db
RECORDED = Path(__file__).parent / "fixtures" / "slurm" / "jobs-v0.0.38.json"
# The recording was taken at 21:17 UTC on 2026-12-01: pending training jobs 11 (one card,
# eligible at once) and 12 (two cards, begin time already at 05:17 the next morning).
RECORDED_AT = datetime(2026, 12, 1, 21, 20, tzinfo=UTC)
NEXT_DAY = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
NIGHT_1, NIGHT_2 = datetime(2026, 12, 1, 22, tzinfo=UTC), datetime(2026, 12, 2, 22, tzinfo=UTC)


class Killed(BaseException):
    """The worker dies (SIGKILL stands in: nothing after it runs)."""


class FakeSlurm:
    """The recorded jobs; ``begin_time=now+Ns`` moves a job's ``eligible_time`` as Slurm does."""

    def __init__(self) -> None:
        answer = json.loads(RECORDED.read_text())
        self.jobs = {job["job_id"]: job for job in answer["jobs"]}
        self.now = RECORDED_AT
        self.deferrals: list[int] = []
        self.die_after_post = False
        self.down = False

    def submit(self, like: int, job_id: int) -> None:
        job = copy.deepcopy(self.jobs[like])
        job.update(job_id=job_id, submit_time=int(self.now.timestamp()),
                   eligible_time=int(self.now.timestamp()))  # fmt: skip
        self.jobs[job_id] = job

    def get(self, path: str, params=None) -> dict:
        if self.down:
            raise SchedulerError("slurmrestd unreachable")
        if path == "/slurm/v0.0.38/jobs":
            return {"errors": [], "jobs": copy.deepcopy(list(self.jobs.values()))}
        job_id = int(path.rsplit("/", 1)[1])
        return {"errors": [], "jobs": [copy.deepcopy(self.jobs[job_id])]}

    def post(self, path: str, body: dict) -> dict:
        job_id = int(path.rsplit("/", 1)[1])
        if body:  # the preflight's empty update changes nothing
            seconds = int(re.fullmatch(r"now\+(\d+)seconds", body["begin_time"]).group(1))
            self.jobs[job_id]["eligible_time"] = int(self.now.timestamp()) + seconds
            self.deferrals.append(job_id)
            if self.die_after_post:
                raise Killed
        return {"errors": []}


@pytest.fixture
def slurm(monkeypatch) -> FakeSlurm:
    server = FakeSlurm()
    monkeypatch.setattr(calendar_follow, "slurm_client_of", lambda source: server)
    return server


@pytest.fixture
def cluster(users) -> Cluster:
    """A Slurm cluster whose calendar (day 08:00-22:00 UTC) was applied on the first day."""
    cluster = Cluster.objects.create(name="slurm-follow")
    scheduler_source_create(
        cluster=cluster, kind=SchedulerSource.Kind.SLURM, base_url="http://slurm.example:6820",
        user_name="root", token_env="SLURM_FOLLOW_JWT",
    )  # fmt: skip
    revision = calendar_request(
        cluster=cluster, actor=actor(users["operator"]), day_start=time(8), day_end=time(22),
        inference_partition="infer", inference_accounts=["tenant-a"],
        training_partitions=["train"], defer_min_cards=1,
    )  # fmt: skip
    calendar_approve(cluster=cluster, actor=actor(users["approver"]), expected_revision=1)
    # What a confirmed application leaves (the application itself is tested on a live Slurm).
    WindowCalendar.objects.filter(cluster=cluster).update(applied=revision)
    return cluster


def _begins(slurm: FakeSlurm, *ids: int) -> list[datetime]:
    return [datetime.fromtimestamp(slurm.jobs[i]["eligible_time"], UTC) for i in ids]


def test_training_jobs_submitted_on_later_days_are_deferred_to_that_night(slurm, cluster):
    assert calendar_deferrals_follow(now=RECORDED_AT) == {"deferred": 1, "failed": 0}
    assert slurm.deferrals == [11]  # 12 already begins at night; running and ended jobs not
    assert _begins(slurm, 11) == [NIGHT_1]
    slurm.now = NEXT_DAY
    slurm.submit(like=11, job_id=13)  # submitted the next morning
    assert calendar_deferrals_follow(now=NEXT_DAY) == {"deferred": 3, "failed": 0}
    # 11 and 12 still pending: last night's begin time has passed, so tonight again.
    assert slurm.deferrals == [11, 11, 12, 13]
    assert _begins(slurm, 11, 12, 13) == [NIGHT_2] * 3
    follow = CalendarApplication.objects.first()
    assert follow.outcome == CalendarApplication.Outcome.CONFIRMED and follow.applied_by is None
    assert [s["kind"] for s in follow.steps] == ["defer"] * 3
    actions = list(
        WindowCalendar.objects.get(cluster=cluster)
        .audit_entries.order_by("id").values_list("action", flat=True)
    )  # fmt: skip
    assert actions[-2:] == ["defer", "defer_confirmed"]


def test_repeating_the_follow_up_sends_and_writes_nothing_more(slurm, cluster):
    calendar_deferrals_follow(now=RECORDED_AT)
    rows = CalendarApplication.objects.count()
    later = RECORDED_AT + timedelta(minutes=5)
    slurm.now = later
    assert calendar_deferrals_follow(now=later) == {"deferred": 0, "failed": 0}
    assert slurm.deferrals == [11]
    assert CalendarApplication.objects.count() == rows


def test_nothing_is_deferred_at_night_or_for_a_calendar_no_longer_in_force(slurm, cluster, users):
    night = datetime(2026, 12, 1, 23, 0, tzinfo=UTC)
    assert calendar_deferrals_follow(now=night) == {"deferred": 0, "failed": 0}
    calendar_request(
        cluster=cluster, actor=actor(users["operator"]), day_start=time(9), day_end=time(21),
        inference_partition="infer", inference_accounts=["tenant-a"],
        training_partitions=["train"],
    )  # fmt: skip
    assert calendar_deferrals_follow(now=RECORDED_AT) == {"deferred": 0, "failed": 0}
    assert slurm.deferrals == []  # revision 2 awaits its approver: revision 1 is not re-used


def test_a_worker_killed_after_sending_leaves_a_lease_and_no_second_deferral(slurm, cluster):
    slurm.die_after_post = True
    with pytest.raises(Killed):
        calendar_deferrals_follow(now=RECORDED_AT)
    slurm.die_after_post = False
    (dead,) = CalendarApplication.objects.all()
    assert dead.outcome == CalendarApplication.Outcome.RUNNING  # the lease, left behind
    soon = slurm.now = RECORDED_AT + timedelta(minutes=5)
    slurm.submit(like=11, job_id=13)
    assert calendar_deferrals_follow(now=soon) == {"deferred": 0, "failed": 0}  # lease held
    CalendarApplication.objects.filter(pk=dead.pk).update(
        started_at=dead.started_at - timedelta(minutes=11)
    )  # the lease expired
    assert calendar_deferrals_follow(now=soon) == {"deferred": 1, "failed": 0}
    assert slurm.deferrals == [11, 13]  # 11 once: it read back deferred


def test_a_scheduler_that_cannot_be_read_is_counted_and_nothing_is_written(slurm, cluster):
    slurm.down = True
    assert calendar_deferrals_follow(now=RECORDED_AT) == {"deferred": 0, "failed": 1}
    assert not CalendarApplication.objects.exists()
