"""The window calendar's four-eyes workflow (no scheduler needed): who may request, approve
and apply, the approval bound to the revision the approver saw, every refusal audited, bad
calendars refused naming the field with nothing written, and the window arithmetic."""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest
from django.core.exceptions import ValidationError

from inventory.models import Cluster
from scheduling.calendar.windows import DayWindow
from scheduling.models_calendar import (
    CalendarAuditEntry,
    CalendarAuditImmutable,
    CalendarRevision,
    WindowCalendar,
)
from scheduling.services.calendar import (
    CalendarConflict,
    CalendarNotPermitted,
    calendar_apply,
    calendar_approve,
    calendar_reject,
    calendar_request,
)
from tests.scheduling.calendar_fixtures import actor, both_roles_user

pytestmark = pytest.mark.django_db
SPEC = {
    "day_start": time(8),
    "day_end": time(20),
    "timezone": "Asia/Shanghai",
    "inference_partition": "infer",
    "inference_accounts": ["serving"],
    "training_partitions": ["train"],
}


@pytest.fixture
def cluster() -> Cluster:
    return Cluster.objects.create(name="c1")


def _actions(cluster) -> list[str]:
    return list(
        CalendarAuditEntry.objects.filter(calendar__cluster=cluster)
        .order_by("id")
        .values_list("action", flat=True)
    )


def test_an_operator_requests_and_an_approver_approves_the_revision(cluster, users):
    revision = calendar_request(cluster=cluster, actor=actor(users["operator"]), **SPEC)
    assert revision.number == 1 and revision.state == CalendarRevision.State.PROPOSED
    calendar_approve(cluster=cluster, actor=actor(users["approver"]), expected_revision=1)
    revision.refresh_from_db()
    assert revision.state == CalendarRevision.State.APPROVED
    assert revision.decided_by == users["approver"]
    assert _actions(cluster) == ["request", "approve"]


def test_the_requester_may_not_approve_their_own_revision_even_holding_both_roles(cluster):
    person = both_roles_user()
    calendar_request(cluster=cluster, actor=actor(person), **SPEC)
    with pytest.raises(CalendarNotPermitted, match="Four eyes"):
        calendar_approve(cluster=cluster, actor=actor(person), expected_revision=1)
    assert CalendarRevision.objects.get().state == CalendarRevision.State.PROPOSED
    assert _actions(cluster) == ["request", "approve_denied"]


@pytest.mark.parametrize("role", ["approver", "customer"])
def test_only_an_operator_may_request_and_the_refusal_is_audited(cluster, users, role):
    with pytest.raises(CalendarNotPermitted):
        calendar_request(cluster=cluster, actor=actor(users[role]), **SPEC)
    assert not CalendarRevision.objects.exists()
    assert _actions(cluster) == ["request_denied"]


@pytest.mark.parametrize("role", ["operator", "customer"])
def test_only_an_approver_may_decide(cluster, users, role):
    calendar_request(cluster=cluster, actor=actor(users["operator"]), **SPEC)
    with pytest.raises(CalendarNotPermitted):
        calendar_reject(cluster=cluster, actor=actor(users[role]), expected_revision=1)
    assert CalendarRevision.objects.get().state == CalendarRevision.State.PROPOSED


def test_an_approval_is_bound_to_the_revision_the_approver_saw(cluster, users):
    calendar_request(cluster=cluster, actor=actor(users["operator"]), **SPEC)
    calendar_approve(cluster=cluster, actor=actor(users["approver"]), expected_revision=1)
    calendar_request(
        cluster=cluster, actor=actor(users["operator"]), **{**SPEC, "day_end": time(22)}
    )
    first = CalendarRevision.objects.get(number=1)
    assert first.state == CalendarRevision.State.SUPERSEDED  # the approval does not carry over
    with pytest.raises(CalendarConflict, match="revision 2"):
        calendar_approve(cluster=cluster, actor=actor(users["approver"]), expected_revision=1)
    with pytest.raises(CalendarConflict, match="proposed"):
        calendar_apply(cluster=cluster, actor=actor(users["operator"]), expected_revision=2)


def test_applying_needs_an_operator_and_an_enabled_scheduler(cluster, users):
    calendar_request(cluster=cluster, actor=actor(users["operator"]), **SPEC)
    calendar_approve(cluster=cluster, actor=actor(users["approver"]), expected_revision=1)
    with pytest.raises(CalendarNotPermitted):
        calendar_apply(cluster=cluster, actor=actor(users["approver"]), expected_revision=1)
    with pytest.raises(CalendarConflict, match="no enabled scheduler"):
        calendar_apply(cluster=cluster, actor=actor(users["operator"]), expected_revision=1)
    assert WindowCalendar.objects.get(cluster=cluster).applied is None
    assert _actions(cluster)[-1] == "apply_denied"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"day_end": time(8)}, "day_end"),
        ({"inference_partition": "infer --all"}, "inference_partition"),
        ({"inference_accounts": []}, "inference_accounts"),
        ({"training_partitions": ["train", "train"]}, "training_partitions"),
        ({"training_partitions": "train"}, "training_partitions"),
        ({"slurm_conf": "etc/slurm.conf"}, "slurm_conf"),
        ({"cluster_queue": "cq-train"}, "cluster_queue"),
        ({"inference_partition": ""}, "inference_partition"),
    ],
)
def test_a_bad_calendar_is_refused_naming_the_field_and_nothing_is_written(
    cluster, users, change, field
):
    with pytest.raises(ValidationError) as caught:
        calendar_request(cluster=cluster, actor=actor(users["operator"]), **{**SPEC, **change})
    assert field in caught.value.message_dict
    assert not CalendarRevision.objects.exists()
    assert WindowCalendar.objects.get(cluster=cluster).revision == 0


def test_audit_rows_are_append_only(cluster, users):
    calendar_request(cluster=cluster, actor=actor(users["operator"]), **SPEC)
    row = CalendarAuditEntry.objects.get()
    with pytest.raises(CalendarAuditImmutable):
        row.save()
    with pytest.raises(CalendarAuditImmutable):
        row.delete()


def test_the_day_window_in_a_time_zone_and_across_midnight():
    shanghai = DayWindow(time(8), time(20), "Asia/Shanghai")
    noon_utc = datetime(2026, 12, 3, 4, 0, tzinfo=UTC)  # 12:00 in Shanghai
    assert shanghai.in_day(noon_utc)
    assert shanghai.night_start(noon_utc) == datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    assert shanghai.next_day_start(noon_utc) == datetime(2026, 12, 4, 0, 0, tzinfo=UTC)
    overnight = DayWindow(time(22), time(6))
    assert overnight.duration.total_seconds() == 8 * 3600
    assert overnight.in_day(datetime(2026, 12, 3, 23, 0, tzinfo=UTC))
    assert overnight.in_day(datetime(2026, 12, 3, 5, 0, tzinfo=UTC))
    assert not overnight.in_day(datetime(2026, 12, 3, 12, 0, tzinfo=UTC))
    assert overnight.night_start(datetime(2026, 12, 3, 12, 0, tzinfo=UTC)) is None
