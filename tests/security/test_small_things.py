"""Issue 26 §9, the small things: the CSP report sink is bounded, a second PromQL source is a
400, one URL check on every path, and webhook signing secrets are write-only."""

from __future__ import annotations

import json
import logging

import pytest
from django.core.cache import cache
from django.test import Client

from inventory.models import Cluster
from rollout.models import WebhookSubscription
from telemetry.models import PromQLDataSource

CSP_LOGGER = "cluster_portal.csp"


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


def _csp_lines(caplog) -> int:
    return len([r for r in caplog.records if r.name == CSP_LOGGER])


def _batch(count: int) -> bytes:
    body = [{"type": "csp-violation", "body": {"effectiveDirective": "img-src"}}] * count
    return json.dumps(body).encode()


@pytest.mark.django_db
def test_one_anonymous_csp_post_writes_at_most_one_log_line(caplog):
    browser = Client(enforce_csrf_checks=True)
    flood = _batch(222)  # 15.6 KB: one log line per report before
    assert 15_000 < len(flood) < 16_384
    small = _batch(60)
    with caplog.at_level(logging.WARNING, logger=CSP_LOGGER):
        refused = browser.post("/csp-report/", flood, content_type="application/reports+json")
        assert _csp_lines(caplog) == 0
        taken = browser.post("/csp-report/", small, content_type="application/reports+json")
    assert refused.status_code == 400 and taken.status_code == 204
    assert _csp_lines(caplog) == 1
    record = next(r for r in caplog.records if r.name == CSP_LOGGER)
    assert '"reports": 60' in record.getMessage()


@pytest.mark.django_db
def test_csp_reports_are_throttled_per_client_address(settings, caplog):
    settings.CSP_REPORT_RATE = "5/min"
    browser = Client(enforce_csrf_checks=True, REMOTE_ADDR="203.0.113.9")
    other = Client(enforce_csrf_checks=True, REMOTE_ADDR="203.0.113.10")
    report = json.dumps({"csp-report": {"violated-directive": "script-src"}})
    with caplog.at_level(logging.WARNING, logger=CSP_LOGGER):
        codes = [
            browser.post("/csp-report/", report, content_type="application/csp-report").status_code
            for _ in range(8)
        ]
        elsewhere = other.post("/csp-report/", report, content_type="application/csp-report")
    assert codes == [204] * 5 + [429] * 3
    assert elsewhere.status_code == 204
    assert _csp_lines(caplog) == 6


@pytest.mark.django_db
def test_a_second_promql_source_for_a_cluster_is_a_400_naming_the_cluster(client_as, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    Cluster.objects.create(name="thanos-dup", kind=Cluster.Kind.UNIFIED)
    client = client_as("operator")
    body = {"cluster": "thanos-dup", "url": "http://thanos.example.com:9090"}
    first = client.post("/api/v1/promql-sources/", body, content_type="application/json")
    second = client.post("/api/v1/promql-sources/", body, content_type="application/json")
    assert first.status_code == 201, first.content
    assert second.status_code == 400, second.content[:300]
    assert "cluster" in second.json()["errors"]
    assert PromQLDataSource.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9090", "http://localhost:9090", "http://169.254.169.254/x"]
)
def test_the_api_refuses_the_addresses_the_forms_refuse(client_as, settings, url):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    Cluster.objects.create(name="thanos-ssrf", kind=Cluster.Kind.UNIFIED)
    answer = client_as("operator").post(
        "/api/v1/promql-sources/",
        {"cluster": "thanos-ssrf", "url": url},
        content_type="application/json",
    )
    assert answer.status_code == 400, answer.content[:300]
    assert "url" in answer.json()["errors"]
    assert not PromQLDataSource.objects.exists()


@pytest.fixture
def admin_client(db):
    from accounts.models import User

    root = User.objects.create_superuser("root", "root@example.com", "pw-for-tests-only")
    browser = Client()
    browser.force_login(root)
    return browser


@pytest.mark.django_db
def test_the_admin_refuses_a_promql_source_on_loopback(admin_client, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    cluster = Cluster.objects.create(name="thanos-admin", kind=Cluster.Kind.UNIFIED)
    answer = admin_client.post(
        "/admin/telemetry/promqldatasource/add/",
        {
            "cluster": cluster.pk,
            "url": "http://127.0.0.1:9090",
            "timeout_seconds": "5",
            "label_map": "{}",
            "enabled": "on",
        },  # fmt: skip
    )
    assert answer.status_code == 200  # the form again, with the error
    assert "refused by the outbound policy" in answer.content.decode()
    assert not PromQLDataSource.objects.exists()


SECRET = "whsec-do-not-show-9f8e7d"


@pytest.mark.django_db
def test_webhook_signing_secrets_are_never_shown_back_in_the_admin(admin_client, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    hook = WebhookSubscription.objects.create(
        name="deploy", url="https://deploy.example.com/hook", events=["transition"], secret=SECRET
    )
    pages = [
        admin_client.get("/admin/rollout/webhooksubscription/"),
        admin_client.get(f"/admin/rollout/webhooksubscription/{hook.pk}/change/"),
        admin_client.get("/migrations/webhooks/"),
    ]
    for page in pages:
        assert page.status_code == 200
        assert SECRET not in page.content.decode()

    change = f"/admin/rollout/webhooksubscription/{hook.pk}/change/"
    form = {"name": "deploy", "url": "https://deploy.example.com/hook", "events": '["transition"]',
            "active": "on", "new_secret": ""}  # fmt: skip
    assert admin_client.post(change, form).status_code == 302
    hook.refresh_from_db()
    assert hook.secret == SECRET  # left empty: kept
    assert admin_client.post(change, {**form, "new_secret": "rotated-1"}).status_code == 302
    hook.refresh_from_db()
    assert hook.secret == "rotated-1"
    assert "rotated-1" not in admin_client.get(change).content.decode()
