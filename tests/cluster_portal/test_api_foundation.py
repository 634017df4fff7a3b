"""/api/v1/me/ and /api/v1/status/processes/ under the shared access mixin."""

from __future__ import annotations

import pytest

from telemetry.catalogue.heartbeats import heartbeat_record
from tests.access import ApiAccessCases


class TestMeEndpoint(ApiAccessCases):
    url = "/api/v1/me/"


class TestProcessStatusEndpoint(ApiAccessCases):
    url = "/api/v1/status/processes/"
    allowed_roles = ("operator", "approver")


@pytest.mark.django_db
def test_me_reports_the_customers_own_tenant_and_roles(client_as):
    body = client_as("customer").get("/api/v1/me/").json()
    assert body == {
        "kind": "user",
        "username": "cust-acme",
        "tenant": "acme",
        "roles": ["customer"],
        "sees_all_tenants": False,
    }


@pytest.mark.django_db
def test_process_status_lists_heartbeats_with_liveness(client_as):
    heartbeat_record(kind="worker", name="celery@a")
    body = client_as("operator").get("/api/v1/status/processes/").json()
    assert body["processes"][0]["name"] == "celery@a"
    assert body["processes"][0]["alive"] is True
    assert body["broker"]
