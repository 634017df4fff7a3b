"""The scheduler page: staff see the sources and every tenant's jobs, a customer only its
tenant's jobs and no source; polling from the page is an operator's and goes through the one
sync service (a scheduler that cannot be read is a message naming why, nothing written)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from inventory.models import Cluster
from scheduling.models import SchedulerJob, SchedulerSource
from scheduling.services.sources import scheduler_source_create
from tests.access import PageAccessCases

DOWN_URL = "http://127.0.0.1:9"  # nothing listens there
SECRET_ENV = "SLURM_JWT_PAGE_SECRET_NAME"


@pytest.fixture(autouse=True)
def _loopback_allowed(settings):
    # The page's source points at a closed loopback port: the outbound policy must let the
    # sync try it (and fail to connect), as a real operator's allow-list would.
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


def _source(url: str = DOWN_URL) -> SchedulerSource:
    cluster, _ = Cluster.objects.get_or_create(name="slurm-page")
    existing = SchedulerSource.objects.filter(cluster=cluster).first()
    return existing or scheduler_source_create(
        cluster=cluster, base_url=url, user_name="slurmrest", token_env=SECRET_ENV, enabled=False
    )


def _job(tenant, job_id: int, name: str, state: str = "RUNNING") -> SchedulerJob:
    return SchedulerJob.objects.create(
        source=_source(), tenant=tenant, job_id=job_id, name=name, account=tenant.slug,
        state=state, gpus=8, nodes=["gpu-001"], synced_at=timezone.now(),
    )  # fmt: skip


class TestSchedulerPageAccess(PageAccessCases):
    url = "/scheduler/"

    def list_markers(self, users, tenants) -> list[str]:
        _job(tenants["acme"], 101, "acme-train-job")
        _job(tenants["panda"], 102, "panda-secret-job")
        return ["panda-secret-job"]


class TestSchedulerSyncAccess(PageAccessCases):
    route = "scheduler-source-sync"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return f"/scheduler/sources/{_source().pk}/sync/"


@pytest.mark.django_db
def test_staff_see_sources_without_the_token_variable(client_as):
    source = _source()
    page = client_as("operator").get("/scheduler/")
    text = page.content.decode()
    assert page.status_code == 200
    assert source.base_url in text and SECRET_ENV not in text
    assert "Poll slurm-page now" in text


@pytest.mark.django_db
def test_a_customer_sees_its_jobs_but_no_source(client_as, tenants):
    _job(tenants["acme"], 201, "acme-infer")
    text = client_as("customer").get("/scheduler/").content.decode()
    assert "acme-infer" in text and "8 GPUs" in text
    assert DOWN_URL not in text and "Poll" not in text


@pytest.mark.django_db
def test_filters_narrow_the_jobs_and_an_unknown_parameter_is_a_400(client_as, tenants):
    _job(tenants["acme"], 301, "waiting-job", state="PENDING")
    _job(tenants["acme"], 302, "running-job", state="RUNNING")
    client = client_as("operator")
    text = client.get("/scheduler/?state=pending").content.decode()
    assert "waiting-job" in text and "running-job" not in text
    assert client.get("/scheduler/?bogus=1").status_code == 400


@pytest.mark.django_db
def test_polling_an_unreachable_scheduler_says_why_and_writes_no_job(client_as):
    source = _source()
    response = client_as("operator").post(f"/scheduler/sources/{source.pk}/sync/", follow=True)
    assert response.status_code == 200
    text = response.content.decode()
    assert "could not be read" in text
    source.refresh_from_db()
    assert source.last_error and source.last_error_at is not None
    assert SchedulerJob.objects.count() == 0
