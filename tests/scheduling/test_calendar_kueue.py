"""The calendar applied to a Kueue ClusterQueue, on the recorded ClusterQueue (no API server
runs here): the official client's GET and merge PATCH go to a fake urllib3 transport that
keeps the object, so everything from URL building to the client's decoder is the real code.
By day the day quota is asked and read back; a 403 on the patch is "cannot apply", nothing
changed; a read-back that differs is not confirmed."""

from __future__ import annotations

import copy
import json
import socket
from datetime import UTC, datetime, time
from pathlib import Path

import pytest
import urllib3

from inventory.models import Cluster
from scheduling.models import SchedulerSource
from scheduling.models_calendar import CalendarApplication, WindowCalendar
from scheduling.services.calendar import calendar_apply, calendar_approve, calendar_request
from scheduling.services.sources import scheduler_source_create
from tests.scheduling.calendar_fixtures import actor

pytestmark = pytest.mark.django_db
QUEUE_PATH = "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/cq-train"
NOON = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
NIGHT = datetime(2026, 12, 3, 23, 0, tzinfo=UTC)


class FakeKueue:
    """Holds the recorded ``cq-train``; answers GET and merge PATCH of it."""

    def __init__(self) -> None:
        items = json.loads(
            (Path(__file__).parent / "fixtures" / "k8s" / "clusterqueues.json").read_text()
        )["items"]
        self.queue = next(i for i in items if i["metadata"]["name"] == "cq-train")
        self.patch_status = 200
        self.ignore_patch = False
        self.patches: list[tuple[str, dict]] = []

    def request(self, _pool, method, url, body=None, headers=None, **_kwargs):
        path = urllib3.util.parse_url(url).path
        if path != QUEUE_PATH:
            return self._answer(404, {"kind": "Status"})
        if method == "PATCH":
            patch = json.loads(body)
            self.patches.append((headers.get("Content-Type"), patch))
            if self.patch_status != 200:
                return self._answer(self.patch_status, {"kind": "Status", "code": 403})
            if not self.ignore_patch:
                self.queue = copy.deepcopy(self.queue)
                self.queue["spec"].update(patch["spec"])
        return self._answer(200, self.queue)

    @staticmethod
    def _answer(status: int, body: dict) -> urllib3.HTTPResponse:
        return urllib3.HTTPResponse(
            body=json.dumps(body).encode(), status=status, reason="OK" if status == 200 else "X",
            headers={"Content-Type": "application/json"}, preload_content=True,
        )  # fmt: skip


@pytest.fixture
def kueue(monkeypatch) -> FakeKueue:
    server = FakeKueue()
    monkeypatch.setattr(
        urllib3.PoolManager, "request", lambda pool, *a, **k: server.request(pool, *a, **k)
    )
    real = socket.getaddrinfo

    def resolve(host, *args, **kwargs):
        if host == "k8s-api.example.com":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 6443))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setenv("K8S_CAL_TOKEN", "sa-token")
    return server


@pytest.fixture
def cluster(users) -> Cluster:
    cluster = Cluster.objects.create(name="k8s-cal")
    scheduler_source_create(
        cluster=cluster, kind=SchedulerSource.Kind.KUBERNETES,
        base_url="https://k8s-api.example.com:6443", user_name="", token_env="K8S_CAL_TOKEN",
    )  # fmt: skip
    calendar_request(
        cluster=cluster, actor=actor(users["operator"]), day_start=time(8), day_end=time(20),
        cluster_queue="cq-train", flavor="h100", resource="nvidia.com/gpu", day_quota=4,
        night_quota=12,
    )  # fmt: skip
    calendar_approve(cluster=cluster, actor=actor(users["approver"]), expected_revision=1)
    return cluster


def _quota(queue: dict) -> str | int:
    return queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]


def test_by_day_the_cluster_queue_gets_the_day_quota_read_back(kueue, cluster, users):
    assert _quota(kueue.queue) == "12"
    application = calendar_apply(
        cluster=cluster, actor=actor(users["operator"]), expected_revision=1, now=NOON
    )
    assert application.outcome == CalendarApplication.Outcome.CONFIRMED, application.message
    (step,) = application.steps
    assert step["asked"] == {"window": "day", "flavor": "h100", "resource": "nvidia.com/gpu",
                             "nominal_quota": 4}  # fmt: skip
    assert step["confirmed"] == step["asked"]
    content_type, patch = kueue.patches[0]
    assert content_type == "application/merge-patch+json"
    assert patch["spec"]["resourceGroups"][0]["coveredResources"] == ["nvidia.com/gpu"]
    assert _quota(kueue.queue) == 4
    assert WindowCalendar.objects.get(cluster=cluster).applied.number == 1


def test_by_night_the_night_quota_is_asked(kueue, cluster, users):
    application = calendar_apply(
        cluster=cluster, actor=actor(users["operator"]), expected_revision=1, now=NIGHT
    )
    assert application.steps[0]["asked"]["nominal_quota"] == 12
    assert application.outcome == CalendarApplication.Outcome.CONFIRMED


def test_a_token_that_may_not_patch_makes_the_calendar_say_it_cannot_apply(kueue, cluster, users):
    kueue.patch_status = 403
    application = calendar_apply(
        cluster=cluster, actor=actor(users["operator"]), expected_revision=1, now=NOON
    )
    assert application.outcome == CalendarApplication.Outcome.REFUSED
    assert "patch on clusterqueues" in application.message
    assert _quota(kueue.queue) == "12"
    assert WindowCalendar.objects.get(cluster=cluster).applied is None


def test_a_read_back_that_differs_is_not_confirmed(kueue, cluster, users):
    kueue.ignore_patch = True  # e.g. an admission webhook put the old quota back
    application = calendar_apply(
        cluster=cluster, actor=actor(users["operator"]), expected_revision=1, now=NOON
    )
    assert application.outcome == CalendarApplication.Outcome.FAILED
    assert application.steps[0]["confirmed"]["nominal_quota"] == 12
    assert "differs" in application.message


def test_at_the_window_boundary_the_applied_calendar_changes_the_quota_once(kueue, cluster, users):
    from scheduling.services.calendar_follow import calendar_windows_follow

    calendar_apply(cluster=cluster, actor=actor(users["operator"]), expected_revision=1, now=NOON)
    assert calendar_windows_follow(now=NOON) == {"applied": 0, "failed": 0}  # still day
    assert calendar_windows_follow(now=NIGHT) == {"applied": 1, "failed": 0}
    assert _quota(kueue.queue) == 12
    latest = CalendarApplication.objects.first()
    assert latest.applied_by is None and latest.steps[0]["asked"]["window"] == "night"
    assert calendar_windows_follow(now=NIGHT) == {"applied": 0, "failed": 0}
