"""Pages: who may open which, what navigation each role gets, and the status page content."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from telemetry.catalogue.heartbeats import heartbeat_record
from telemetry.models import Heartbeat
from tests.access import PageAccessCases


class TestHomePage(PageAccessCases):
    url = "/"


class TestStatusPage(PageAccessCases):
    url = "/status/"
    allowed_roles = ("operator", "approver")


@pytest.mark.django_db
def test_operator_navigation_links_to_status_and_customer_navigation_does_not(client_as):
    operator_page = client_as("operator").get("/").content.decode()
    assert 'href="/status/"' in operator_page
    customer_page = client_as("customer").get("/").content.decode()
    assert 'href="/status/"' not in customer_page
    assert "Acme Robotics" in customer_page


@pytest.mark.django_db
def test_customer_home_never_lists_another_tenants_users(client_as):
    page = client_as("customer").get("/").content.decode()
    assert "cust-acme" in page
    assert "cust-panda" not in page
    assert "Panda Speech Cloud" not in page


@pytest.mark.django_db
def test_status_page_shows_live_and_stale_processes(client_as):
    heartbeat_record(kind="worker", name="celery@live")
    heartbeat_record(kind="beat", name="beat@old")
    Heartbeat.objects.filter(name="beat@old").update(
        last_seen=timezone.now() - timedelta(minutes=10)
    )
    page = client_as("operator").get("/status/").content.decode()
    assert "celery@live" in page and "beat@old" in page
    assert page.count(">alive<") >= 2  # the worker tile and its row
    assert ">down<" in page  # the stale beat row


@pytest.mark.django_db
def test_login_page_signs_in_with_the_right_password_only(client, users):
    from tests.conftest import PASSWORD

    bad = client.post("/login/", {"username": "op", "password": "wrong"})
    assert bad.status_code == 200
    assert "did not match" in bad.content.decode()
    good = client.post("/login/", {"username": "op", "password": PASSWORD})
    assert good.status_code == 302
    assert client.get("/").status_code == 200
