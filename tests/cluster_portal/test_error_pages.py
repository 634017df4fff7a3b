"""Errors for people (issue 24 part 11): no technical 404 for customers under DEBUG, a 403
logs one line."""

from __future__ import annotations

import logging

import pytest
from django.test import override_settings

from tests.cluster_portal.test_settings import run_python

TECHNICAL_404_MARKERS = ("URLconf", "Using the URLconf", "Raised by", "urlpatterns")


def assert_friendly_404(response) -> None:
    assert response.status_code == 404
    body = response.content.decode()
    for marker in TECHNICAL_404_MARKERS:
        assert marker not in body, marker
    assert "Page not found" in body
    assert 'href="/"' in body  # a way back home


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_under_debug_a_customer_asking_for_an_unknown_url_gets_the_friendly_404(client_as):
    assert_friendly_404(client_as("customer").get("/no-such-page/"))


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_under_debug_an_anonymous_visitor_gets_the_friendly_404(client):
    assert_friendly_404(client.get("/dashboards/no-such-page/"))


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_under_debug_a_404_raised_by_a_view_names_no_view_to_a_customer(client_as):
    # Another tenant's (here: no) workload: the view raises Http404 itself.
    assert_friendly_404(client_as("customer").get("/dashboards/workloads/999999/"))


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_under_debug_staff_still_get_django_s_technical_404(client_as):
    response = client_as("operator").get("/no-such-page/")
    assert response.status_code == 404
    assert "URLconf" in response.content.decode()


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_under_debug_a_missing_trailing_slash_still_redirects(client_as):
    response = client_as("customer").get("/dashboards")
    assert response.status_code == 301
    assert response["Location"] == "/dashboards/"


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_under_debug_an_unknown_api_url_answers_the_json_error_body(client_as):
    response = client_as("customer").get("/api/v1/no-such-endpoint/")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


@pytest.mark.django_db
def test_without_debug_the_404_page_is_the_friendly_one_for_everyone(client_as):
    assert_friendly_404(client_as("operator").get("/no-such-page/"))


@pytest.mark.django_db
def test_a_403_is_logged_as_one_warning_without_a_traceback(client_as, caplog):
    with caplog.at_level(logging.INFO, logger="django.request"):
        response = client_as("customer").get("/dashboards/hardware/")
    assert response.status_code == 403
    records = [r for r in caplog.records if r.name == "django.request"]
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING
    assert records[0].exc_info is None and not records[0].exc_text
    assert "/dashboards/hardware/" in records[0].getMessage()


# The demo's own logging set-up (DEBUG=1, the settings' LOGGING), in a fresh process, so
# Django's default handlers are really installed: what reaches stderr for one 403.
FORBIDDEN_UNDER_DEBUG = """
import sys, types, django
django.setup()
from django.core.exceptions import PermissionDenied
from django.test import Client, override_settings
from django.urls import path

def refuse(request):
    raise PermissionDenied

probe = types.ModuleType("probe_urls")
from cluster_portal.urls import urlpatterns
probe.urlpatterns = [path("refused/", refuse), *urlpatterns]
sys.modules["probe_urls"] = probe
with override_settings(ROOT_URLCONF="probe_urls"):
    status = Client().get("/refused/").status_code
print("STATUS", status)
"""


def test_under_debug_one_403_writes_one_log_line_and_no_traceback(tmp_path):
    result = run_python(FORBIDDEN_UNDER_DEBUG, {"PORTAL_VAR_DIR": str(tmp_path), "DEBUG": "1"})
    assert "STATUS 403" in result.stdout, result.stderr
    lines = [line for line in result.stderr.splitlines() if "Forbidden" in line]
    assert lines == ["Forbidden (Permission denied): /refused/"], result.stderr
    assert "Traceback" not in result.stderr, result.stderr
