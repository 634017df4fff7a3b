"""``portal_http_request_duration_seconds`` on ``/metrics``: a histogram per route group,
method and status class, summed over every gunicorn worker (multiprocess mode)."""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from cluster_portal.web.request_metrics import route_group
from tests.servers import WebServer
from tests.workers import database_url_for_subprocess

FAMILY = "portal_http_request_duration_seconds"


def _count(text: str, group: str, method: str, status: str) -> float:
    pattern = (
        rf'^{FAMILY}_count{{(?=[^}}]*group="{group}")(?=[^}}]*method="{method}")'
        rf'(?=[^}}]*status="{status}")[^}}]*}} (\S+)$'
    )
    found = re.findall(pattern, text, flags=re.M)
    return sum(float(value) for value in found)


def test_route_groups_are_bounded():
    assert route_group("/api/v1/plans/") == "api"
    assert route_group("/") == "home"
    assert route_group("/dashboards/hardware/") == "dashboards"
    assert route_group("/anything-a-scanner-tries/x") == "other"


@pytest.mark.django_db
def test_requests_are_counted_by_group_method_and_status(users):
    token = token_create(
        name="m", scopes=["read"], created_by=users["operator"], owner=users["operator"]
    ).plaintext
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    before = client.get("/metrics").content.decode()
    for _ in range(3):
        assert client.get("/api/v1/plans/").status_code == 200
    assert client.get("/api/v1/plans/999999/").status_code == 404
    after = client.get("/metrics").content.decode()
    assert f"# TYPE {FAMILY} histogram" in after
    assert _count(after, "api", "GET", "2xx") - _count(before, "api", "GET", "2xx") == 3
    assert _count(after, "api", "GET", "4xx") - _count(before, "api", "GET", "4xx") == 1
    assert f'{FAMILY}_bucket{{group="api",le="+Inf",method="GET",status="2xx"}}' in after


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_under_gunicorn_every_worker_s_requests_are_summed(tmp_path, users):
    token = token_create(
        name="m", scopes=["read"], created_by=users["operator"], owner=users["operator"]
    ).plaintext
    headers = {"Authorization": f"Bearer {token}"}
    env = {
        "DATABASE_URL": database_url_for_subprocess(),
        "PORTAL_VAR_DIR": str(tmp_path),
        "REDIS_URL": os.environ.get("REDIS_URL", ""),
    }
    web = WebServer(
        env=env, workers=2, threads=1, extra_args=("-c", "python:cluster_portal.gunicorn_conf")
    )
    try:
        requests.get(web.url + "/healthz", timeout=30)
        # Concurrent requests with one thread per worker: both workers answer some.
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(
                pool.map(
                    lambda _: requests.get(web.url + "/api/v1/plans/", headers=headers, timeout=30),
                    range(24),
                )
            )
        assert all(a.status_code == 200 for a in answers)
        text = requests.get(web.url + "/metrics", headers=headers, timeout=30).text
        assert _count(text, "api", "GET", "2xx") == 24, text[-2000:]
        assert len(list((tmp_path / "prometheus").glob("*.db"))) >= 2  # one file per worker
    finally:
        web.stop()
