"""The before-you-sign what-if of a calendar revision: the cluster's own synced jobs of the
last day replayed through the twin under no calendar and under the proposed one, each figure
with its seed interval, stored on the revision and shown on the calendar page; a cluster the
twin cannot model fails with the reason; queuing it is staff-only."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import pytest

from inventory.models import Cluster
from scheduling.models import SchedulerJob, SchedulerNode, SchedulerPartition
from scheduling.models_calendar import CalendarRevision
from scheduling.services.calendar import calendar_request
from scheduling.services.sources import scheduler_account_mapping_create, scheduler_source_create
from simulation.engine.calendar_replay import calendar_replay
from simulation.services.calendar_whatif import calendar_whatif_run
from tests.access import PageAccessCases
from tests.scheduling.calendar_fixtures import actor

pytestmark = pytest.mark.django_db
NOW = datetime.now(UTC).replace(microsecond=0)


def _cluster(tenants, *, nodes: bool = True) -> Cluster:
    cluster = Cluster.objects.create(name="cal-whatif")
    scheduler_account_mapping_create(cluster=cluster, account="train", tenant=tenants["acme"])
    source = scheduler_source_create(
        cluster=cluster,
        base_url="http://slurm.example.com:6820",
        user_name="slurmrest",
        token_env="UNSET_TOKEN",
        enabled=False,
    )
    if nodes:
        for name in ("gpu-001", "gpu-002"):
            SchedulerNode.objects.create(
                source=source, name=name, state="idle", gres="gpu:h100:4(S:0)"
            )
        SchedulerPartition.objects.create(source=source, name="infer", nodes=["gpu-001"])
    # A training job every 30 minutes over the last 23 hours, two cards, each ran four hours.
    for i in range(36):
        submit = NOW - timedelta(hours=23) + timedelta(minutes=30 * i)
        SchedulerJob.objects.create(
            source=source,
            tenant=tenants["acme"],
            job_id=1000 + i,
            account="train",
            partition="train",
            state="COMPLETED",
            gpus=2,
            submit_time=submit,
            start_time=submit + timedelta(minutes=5),
            end_time=submit + timedelta(hours=4, minutes=5),
            synced_at=NOW,
        )
    SchedulerJob.objects.create(
        source=source,
        tenant=tenants["acme"],
        job_id=2000,
        account="train",
        partition="train",
        state="PENDING",
        gpus=2,
        submit_time=NOW - timedelta(hours=1),
        synced_at=NOW,
    )
    return cluster


def _revision(cluster, users) -> CalendarRevision:
    return calendar_request(
        cluster=cluster,
        actor=actor(users["operator"]),
        day_start=time(8),
        day_end=time(20),
        inference_partition="infer",
        inference_accounts=["serving"],
    )


def test_the_history_replayed_under_the_proposed_calendar_is_stored_with_its_interval(
    tenants, users, client_as
):
    cluster = _cluster(tenants)
    revision = _revision(cluster, users)
    assert calendar_whatif_run(revision_id=revision.pk, days=1, seeds=(7, 8)) == "done"
    revision.refresh_from_db()
    result = revision.whatif["result"]
    assert revision.whatif["state"] == "done"
    assert result["jobs"] == 36 and result["never_started"] == 1
    assert (result["cards"], result["inference_cards"]) == (8, 4)
    assert result["modelled_cards"] == 64 and result["repeat"] == 8
    assert result["current_revision"] is None
    allocated = result["difference"]["utilization_allocated_mean"]
    assert allocated["n"] == 2 and allocated["ci95_low"] is not None
    # Lending the idle inference cards to training at night can only add allocation.
    assert allocated["mean"] > 0
    page = client_as("approver").get(f"/scheduler/calendars/{cluster.pk}/").content.decode()
    assert "Before you sign" in page and "Cards allocated (mean)" in page
    assert f"{allocated['mean'] * 100:+.2f}" in page


def test_a_cluster_without_synced_cards_fails_with_the_reason(tenants, users):
    cluster = _cluster(tenants, nodes=False)
    revision = _revision(cluster, users)
    assert calendar_whatif_run(revision_id=revision.pk, days=1, seeds=(7,)) == "failed"
    revision.refresh_from_db()
    assert "no cards" in revision.whatif["error"]


def test_the_replay_refuses_an_empty_history_and_a_share_out_of_range():
    with pytest.raises(ValueError, match="nothing to replay"):
        calendar_replay(
            cards=8,
            demand=[],
            inference_fraction=0.5,
            hours=1,
            start_hour=0,
            current_night=None,
            proposed_night=(20, 8),
        )
    with pytest.raises(ValueError, match="inference share"):
        calendar_replay(
            cards=8,
            demand=[{"cards": 1, "submit": 0, "duration": 60}],
            inference_fraction=1.0,
            hours=1,
            start_hour=0,
            current_night=None,
            proposed_night=(20, 8),
        )


class TestCalendarWhatifQueueAccess(PageAccessCases):
    route = "calendar-whatif"
    method = "post"
    allowed_roles = ("operator", "approver")

    def get_url(self, users) -> str:
        cluster = Cluster.objects.get_or_create(name="cal-q")[0]
        return f"/whatif/calendar-revisions/{_revision(cluster, users).pk}/"
