"""Scheduler sources in the API (issue 32): operators manage them and a ``read`` token reads
them, the token's environment variable is never answered, a scheduler that cannot be read
answers its recorded error, and a tenant sees only its own scheduler jobs."""

from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from inventory.models import Cluster
from scheduling.models import SchedulerJob, SchedulerSource
from scheduling.services.sources import scheduler_source_create
from tests.access import ApiAccessCases

DOWN_URL = "http://127.0.0.1:9"  # nothing listens there
SECRET_ENV = "SLURM_JWT_VERY_PRIVATE_NAME"


def _token_client(scopes: list[str]) -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='t', scopes=scopes).plaintext}"
    )
    return client


def _source(
    name: str = "slurm-x", url: str = "http://slurm-head.example.com:6820"
) -> SchedulerSource:
    cluster, _ = Cluster.objects.get_or_create(name=name)
    existing = SchedulerSource.objects.filter(cluster=cluster).first()
    return existing or scheduler_source_create(
        cluster=cluster, base_url=url, user_name="slurmrest", token_env=SECRET_ENV, enabled=False
    )


def _job(source: SchedulerSource, tenant, job_id: int, name: str, state: str = "RUNNING"):
    return SchedulerJob.objects.create(
        source=source, tenant=tenant, job_id=job_id, name=name, account=tenant.slug,
        state=state, synced_at=timezone.now(),
    )  # fmt: skip


class TestSchedulerSourceListAccess(ApiAccessCases):
    route = "api:scheduler-sources"
    url = "/api/v1/scheduler-sources/"
    allowed_roles = ("operator",)


class TestSchedulerSourceDetailAccess(ApiAccessCases):
    route = "api:scheduler-source"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return f"/api/v1/scheduler-sources/{_source().pk}/"


class TestSchedulerSourceSyncAccess(ApiAccessCases):
    """Polling a source is an operator's command (others 403, anonymous 401). The source's
    scheduler does not exist, so the operator, let through, gets the sync's own 503."""

    route = "api:scheduler-source-sync"
    method = "post"
    content_type = "application/json"
    allowed_roles = ("operator",)

    def expect_allowed(self, role: str, response) -> None:
        assert response.status_code == 503, f"{role} got {response.status_code}"
        assert response.json()["code"] == "scheduler_unavailable"

    def get_url(self, users) -> str:
        return f"/api/v1/scheduler-sources/{_source().pk}/sync/"


class TestSchedulerJobListAccess(ApiAccessCases):
    route = "api:scheduler-jobs"
    url = "/api/v1/scheduler-jobs/"

    def list_markers(self, users, tenants) -> list[str]:
        source = _source("slurm-jobs")
        _job(source, tenants["acme"], 101, "acme-train")
        _job(source, tenants["panda"], 202, "panda-secret-run")
        return ["panda-secret-run"]


@pytest.mark.django_db
def test_an_operator_creates_updates_and_deletes_a_source(client_as):
    client = client_as("operator")
    Cluster.objects.create(name="slurm-b")
    created = client.post(
        "/api/v1/scheduler-sources/",
        {"cluster": "slurm-b", "base_url": "http://slurm-b.example.com:6820", "user_name": "slurmrest",
         "token_env": SECRET_ENV, "enabled": False},
        content_type="application/json",
    )  # fmt: skip
    assert created.status_code == 201, created.content
    assert SECRET_ENV not in created.content.decode()
    assert created.json()["has_token_env"] is True
    pk = created.json()["id"]
    url = f"/api/v1/scheduler-sources/{pk}/"
    changed = client.patch(url, {"timeout_seconds": 20}, content_type="application/json")
    assert changed.status_code == 200, changed.content
    assert SchedulerSource.objects.get(pk=pk).timeout_seconds == 20
    for answer in (client.get(url), client.get("/api/v1/scheduler-sources/")):
        assert answer.status_code == 200 and SECRET_ENV not in answer.content.decode()
    assert client.delete(url).status_code == 204
    assert not SchedulerSource.objects.exists()


@pytest.mark.django_db
def test_a_bad_token_env_is_a_400_naming_the_field_and_writes_nothing(client_as):
    Cluster.objects.create(name="slurm-c")
    answer = client_as("operator").post(
        "/api/v1/scheduler-sources/",
        {"cluster": "slurm-c", "base_url": "http://slurm-c.example.com:6820", "user_name": "slurmrest",
         "token_env": "eyJhbGciOi.not-a-name"},
        content_type="application/json",
    )  # fmt: skip
    assert answer.status_code == 400
    assert "token_env" in answer.content.decode()
    assert "eyJhbGciOi" not in answer.content.decode()
    assert not SchedulerSource.objects.exists()


@pytest.mark.django_db
def test_a_bad_update_is_a_400_and_changes_nothing(client_as):
    source = _source()
    answer = client_as("operator").patch(
        f"/api/v1/scheduler-sources/{source.pk}/",
        {"timeout_seconds": 999},
        content_type="application/json",
    )
    assert answer.status_code == 400 and "timeout_seconds" in answer.content.decode()
    source.refresh_from_db()
    assert source.timeout_seconds == 10.0


@pytest.mark.django_db
def test_a_read_token_lists_sources_but_cannot_change_them(users):
    source = _source()
    client = _token_client(["read"])
    listed = client.get("/api/v1/scheduler-sources/")
    assert listed.status_code == 200
    assert [s["cluster"] for s in listed.json()["results"]] == ["slurm-x"]
    assert SECRET_ENV not in listed.content.decode()
    url = f"/api/v1/scheduler-sources/{source.pk}/"
    assert client.patch(url, {"enabled": True}, format="json").status_code == 403
    assert client.delete(url).status_code == 403
    assert client.post(f"{url}sync/").status_code == 403
    assert SchedulerSource.objects.get().enabled is False


@pytest.mark.django_db
def test_anonymous_callers_are_refused(db):
    source = _source()
    client = APIClient()
    assert client.get("/api/v1/scheduler-sources/").status_code in (401, 403)
    assert client.post(f"/api/v1/scheduler-sources/{source.pk}/sync/").status_code in (401, 403)
    assert client.get("/api/v1/scheduler-jobs/").status_code in (401, 403)


@pytest.mark.django_db
def test_syncing_an_unreachable_scheduler_answers_the_recorded_error(
    client_as, settings, monkeypatch
):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    monkeypatch.setenv(SECRET_ENV, "eyJhbGciOiJIUzI1NiJ9.the-jwt-itself")
    source = _source("slurm-down", DOWN_URL)
    answer = client_as("operator").post(f"/api/v1/scheduler-sources/{source.pk}/sync/")
    assert answer.status_code == 503, answer.content
    assert answer.json()["code"] == "scheduler_unavailable"
    source.refresh_from_db()
    assert source.last_error and source.last_error_at
    assert source.last_error in answer.content.decode()
    assert "the-jwt-itself" not in answer.content.decode() + source.last_error


@pytest.mark.django_db
def test_a_tenant_sees_only_its_jobs_and_filters_by_cluster_and_state(client_as, tenants):
    source = _source("slurm-jobs")
    _job(source, tenants["acme"], 1, "acme-running")
    _job(source, tenants["acme"], 2, "acme-pending", state="PENDING")
    _job(source, tenants["panda"], 3, "panda-running")
    names = lambda r: sorted(j["name"] for j in r.json()["results"])  # noqa: E731
    assert names(client_as("customer").get("/api/v1/scheduler-jobs/")) == [
        "acme-pending", "acme-running",
    ]  # fmt: skip
    assert names(client_as("other_customer").get("/api/v1/scheduler-jobs/")) == ["panda-running"]
    operator = client_as("operator")
    assert names(operator.get("/api/v1/scheduler-jobs/?state=RUNNING")) == [
        "acme-running", "panda-running",
    ]  # fmt: skip
    assert names(operator.get("/api/v1/scheduler-jobs/?cluster=nowhere")) == []


@pytest.mark.slow
@pytest.mark.django_db
def test_an_operator_syncs_the_real_slurm_through_the_api(client_as, slurm, settings, monkeypatch):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]  # the test's slurmrestd is local
    monkeypatch.setenv("PORTAL_TEST_SLURM_JWT_API", slurm.token)
    Cluster.objects.create(name="slurm-live", kind=Cluster.Kind.UNIFIED)
    client = client_as("operator")
    created = client.post(
        "/api/v1/scheduler-sources/",
        {"cluster": "slurm-live", "base_url": slurm.url, "user_name": "slurmrest",
         "token_env": "PORTAL_TEST_SLURM_JWT_API", "timeout_seconds": 20},
        content_type="application/json",
    )  # fmt: skip
    assert created.status_code == 201, created.content
    answer = client.post(f"/api/v1/scheduler-sources/{created.json()['id']}/sync/")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["cluster"] == "slurm-live" and body["api_version"] == "v0.0.38"
    assert body["nodes"] == 2 and body["partitions"] == 2
    assert slurm.token not in answer.content.decode()
    source = client.get(f"/api/v1/scheduler-sources/{created.json()['id']}/").json()
    assert source["last_success_at"] and source["last_error"] == ""
