"""The window calendar over the API and its pages: staff read, customers get 403, each
command reaches only its role (the service's refusal is the 403), bad input is a 400 naming
the field with nothing written, and the four-eyes flow end to end through HTTP."""

from __future__ import annotations

import pytest

from inventory.models import Cluster
from scheduling.models_calendar import CalendarAuditEntry, CalendarRevision
from scheduling.services.calendar import calendar_request
from tests.access import ApiAccessCases, PageAccessCases
from tests.scheduling.calendar_fixtures import actor

BODY = {
    "day_start": "08:00",
    "day_end": "20:00",
    "timezone": "Asia/Shanghai",
    "inference_partition": "infer",
    "inference_accounts": ["serving"],
    "training_partitions": ["train"],
    "reason": "inference by day",
}


def _cluster(name: str = "cal-a") -> Cluster:
    return Cluster.objects.get_or_create(name=name)[0]


def _proposed(users, name: str = "cal-a") -> Cluster:
    cluster = _cluster(name)
    calendar_request(
        cluster=cluster, actor=actor(users["operator"]), day_start="08:00", day_end="20:00",
        inference_partition="infer", inference_accounts=["serving"],
    )  # fmt: skip
    return cluster


class TestCalendarListAccess(ApiAccessCases):
    route = "api:scheduler-calendars"
    url = "/api/v1/scheduler-calendars/"
    allowed_roles = ("operator", "approver")


class TestCalendarDetailAccess(ApiAccessCases):
    route = "api:scheduler-calendar"
    allowed_roles = ("operator", "approver")

    def get_url(self, users) -> str:
        return f"/api/v1/scheduler-calendars/{_cluster().pk}/"


class TestCalendarRequestAccess(ApiAccessCases):
    route = "api:scheduler-calendar-command"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return f"/api/v1/scheduler-calendars/{_cluster().pk}/request/"

    def post_data(self, users) -> dict:
        return BODY


class TestCalendarApproveAccess(ApiAccessCases):
    route = "api:scheduler-calendar-command"
    method = "post"
    allowed_roles = ("approver",)

    def get_url(self, users) -> str:
        return f"/api/v1/scheduler-calendars/{_proposed(users).pk}/approve/"

    def post_data(self, users) -> dict:
        return {"revision": 1}


class TestCalendarApplyAccess(ApiAccessCases):
    """The operator gets through to the service's own 409 (revision 1 is not approved)."""

    route = "api:scheduler-calendar-command"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return f"/api/v1/scheduler-calendars/{_proposed(users).pk}/apply/"

    def post_data(self, users) -> dict:
        return {"revision": 1}


class TestCalendarListPageAccess(PageAccessCases):
    route = "scheduler-calendars"
    url = "/scheduler/calendars/"
    allowed_roles = ("operator", "approver")


class TestCalendarPageAccess(PageAccessCases):
    route = "scheduler-calendar"
    allowed_roles = ("operator", "approver")

    def get_url(self, users) -> str:
        return f"/scheduler/calendars/{_proposed(users).pk}/"


class TestCalendarRejectPageAccess(PageAccessCases):
    route = "scheduler-calendar-command"
    method = "post"
    allowed_roles = ("approver",)

    def get_url(self, users) -> str:
        return f"/scheduler/calendars/{_proposed(users).pk}/reject/"

    def post_data(self, users) -> dict:
        return {"revision": "1", "note": "not tonight"}


@pytest.mark.django_db
def test_the_four_eyes_flow_through_the_api(client_as, users):
    cluster = _cluster()
    base = f"/api/v1/scheduler-calendars/{cluster.pk}"
    made = client_as("operator").post(f"{base}/request/", BODY, content_type="application/json")
    assert made.status_code == 201, made.content
    assert made.json()["number"] == 1 and made.json()["requested_by"] == "op"
    approved = client_as("approver").post(
        f"{base}/approve/", {"revision": 1, "note": "ok"}, content_type="application/json"
    )
    assert approved.status_code == 200 and approved.json()["state"] == "approved"
    stale = client_as("approver").post(
        f"{base}/approve/", {"revision": 1}, content_type="application/json"
    )
    assert stale.status_code == 409  # already decided
    detail = client_as("approver").get(f"{base}/")
    assert detail.json()["revision"] == 1 and detail.json()["applied_revision"] is None
    applied = client_as("operator").post(
        f"{base}/apply/", {"revision": 1}, content_type="application/json"
    )
    assert applied.status_code == 409
    assert "scheduler source" in applied.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"day_start": "25:00"}, "day_start"),
        ({"timezone": "Nowhere/City"}, "timezone"),
        ({"inference_accounts": ["a;b"]}, "inference_accounts"),
        ({"day_end": "08:00"}, "day_end"),
        ({"defer_min_cards": -1}, "defer_min_cards"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_a_bad_calendar_is_a_400_naming_the_field_and_nothing_is_written(
    client_as, users, change, field
):
    cluster = _cluster()
    answer = client_as("operator").post(
        f"/api/v1/scheduler-calendars/{cluster.pk}/request/", {**BODY, **change},
        content_type="application/json",
    )  # fmt: skip
    assert answer.status_code == 400, answer.content
    assert field in answer.content.decode()
    assert not CalendarRevision.objects.exists()


@pytest.mark.django_db
def test_the_page_shows_the_revision_and_refuses_the_requester_s_own_approval(client_as, users):
    from tests.scheduling.calendar_fixtures import both_roles_user

    cluster = _cluster()
    person = both_roles_user()
    calendar_request(
        cluster=cluster, actor=actor(person), day_start="08:00", day_end="20:00",
        inference_partition="infer", inference_accounts=["serving"],
    )  # fmt: skip
    client = client_as("operator")
    client.force_login(person)
    page = client.get(f"/scheduler/calendars/{cluster.pk}/")
    assert page.status_code == 200
    assert "08:00–20:00" in page.content.decode()
    refused = client.post(f"/scheduler/calendars/{cluster.pk}/approve/", {"revision": "1"})
    assert refused.status_code == 403
    assert "Four eyes" in refused.content.decode()
    assert CalendarRevision.objects.get().state == "proposed"
    assert CalendarAuditEntry.objects.filter(action="approve_denied").count() == 1


@pytest.mark.django_db
def test_a_bad_form_on_the_page_is_a_400_with_the_field_and_nothing_written(client_as):
    cluster = _cluster()
    answer = client_as("operator").post(
        f"/scheduler/calendars/{cluster.pk}/request/",
        {"day_start": "08:00", "day_end": "20:00", "timezone": "UTC", "defer_min_cards": "1",
         "inference_partition": "infer"},
    )  # fmt: skip
    assert answer.status_code == 400
    assert "without accounts" in answer.content.decode()
    assert not CalendarRevision.objects.exists()
