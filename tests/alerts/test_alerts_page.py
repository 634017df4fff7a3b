"""Alerts: triage actions, the alerts page, its CSV export and the API."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import translation
from django.utils.html import escape

from alerts.evaluate import alerts_evaluate
from alerts.models import Alert, AlertRule
from alerts.services import AlertTransitionError, alert_acknowledge, alert_resolve
from telemetry.models import Entity
from tests.access import ApiAccessCases, PageAccessCases
from tests.alerts.test_alerts import MIN, NOW, alerts_of, every_30s, write

# --- acknowledge / resolve --------------------------------------------------------------------


def make_alert(rule: AlertRule, entity: Entity, **fields) -> Alert:
    values = {
        "severity": rule.severity,
        "value": 1.0,
        "message": f"{entity.key}: test",
        "first_seen": NOW,
        "last_seen": NOW,
        "tenant": entity.tenant,
    }
    values.update(fields)
    return Alert.objects.create(rule=rule, entity=entity, **values)


@pytest.mark.django_db
def test_acknowledge_and_resolve_follow_the_legal_transitions(rules, cards, users):
    operator = users["operator"]
    alert = make_alert(rules["accelerator-temperature-high"], cards[0])

    acknowledged = alert_acknowledge(alert=alert, user=operator)
    assert acknowledged.state == "acknowledged" and acknowledged.acknowledged_by == operator
    assert acknowledged.acknowledged_at is not None
    with pytest.raises(AlertTransitionError, match="already acknowledged"):
        alert_acknowledge(alert=alert, user=operator)

    resolved = alert_resolve(alert=alert, user=operator)
    assert resolved.state == "resolved" and resolved.resolved_by == operator
    with pytest.raises(AlertTransitionError, match="already resolved"):
        alert_resolve(alert=alert, user=operator)
    with pytest.raises(AlertTransitionError, match="cannot be acknowledged"):
        alert_acknowledge(alert=alert, user=operator)
    alert.refresh_from_db()
    assert alert.acknowledged_by == operator and alert.resolved_by == operator


@pytest.mark.django_db
def test_a_hand_resolved_alert_whose_condition_holds_reopens_as_a_new_alert(rules, cards, users):
    write("accelerator_temperature_celsius", cards[0], every_30s(97.0))
    alerts_evaluate(now=NOW)
    alert_resolve(alert=alerts_of("accelerator-temperature-high", cards[0]).get(), user=None)
    alerts_evaluate(now=NOW + timedelta(seconds=30))
    states = sorted(
        alerts_of("accelerator-temperature-high", cards[0]).values_list("state", flat=True)
    )
    assert states == ["firing", "resolved"]


# --- page, actions, CSV -----------------------------------------------------------------------


class TestAlertsPage(PageAccessCases):
    url = "/alerts/"
    allowed_roles = ("operator", "approver")


class TestAlertsApi(ApiAccessCases):
    url = "/api/v1/alerts/"

    def list_markers(self, users, tenants) -> list[str]:
        from tests.alerts.test_alerts_access import alert_of

        alert_of("acme")
        return [alert_of("panda").entity.key]


@pytest.fixture
def triage(rules, cards, cluster, workloads) -> dict[str, Alert]:
    chat = Entity.objects.create(
        cluster=cluster, kind="workload", key="acme-chat", tenant=workloads["chat"].tenant
    )
    asr = Entity.objects.create(
        cluster=cluster, kind="workload", key="panda-asr", tenant=workloads["asr"].tenant
    )
    return {
        "hot": make_alert(
            rules["accelerator-temperature-critical"], cards[0], value=97.0, last_seen=NOW + 3 * MIN
        ),
        "warm": make_alert(
            rules["accelerator-temperature-high"], cards[1], value=88.0, last_seen=NOW + MIN
        ),
        "old": make_alert(
            rules["accelerator-temperature-high"],
            cards[2],
            state="resolved",
            resolved_at=NOW,
            last_seen=NOW + timedelta(hours=1),  # newest, but closed: still listed last
        ),
        "chat": make_alert(rules["slo-fast-burn"], chat, value=0.8, last_seen=NOW + 2 * MIN),
        "asr": make_alert(rules["slo-slow-burn"], asr, value=0.97),
    }


@pytest.mark.django_db
def test_page_lists_open_alerts_first_with_runbook_and_operator_buttons(client_as, triage):
    page = client_as("operator").get("/alerts/").content.decode()
    positions = [page.index(f'id="alert-{triage[k].pk}"') for k in ("hot", "warm", "old")]
    assert positions == sorted(positions)
    assert "<details>" in page and "drain the card" in page
    assert "97 &gt; 95" in page or "97 > 95" in page
    assert f'action="/alerts/{triage["hot"].pk}/acknowledge/"' in page
    assert f'action="/alerts/{triage["old"].pk}/resolve/"' not in page

    approver_page = client_as("approver").get("/alerts/").content.decode()
    assert f'id="alert-{triage["hot"].pk}"' in approver_page
    assert "/acknowledge/" not in approver_page


@pytest.mark.django_db
def test_page_filters_by_state_and_severity(client_as, triage):
    client = client_as("operator")
    critical = client.get("/alerts/?severity=critical").content.decode()
    assert f'id="alert-{triage["hot"].pk}"' in critical
    assert f'id="alert-{triage["warm"].pk}"' not in critical
    resolved = client.get("/alerts/?state=resolved").content.decode()
    assert f'id="alert-{triage["old"].pk}"' in resolved
    assert f'id="alert-{triage["hot"].pk}"' not in resolved


@pytest.mark.django_db
def test_operator_acknowledges_and_resolves_through_the_page(client_as, triage):
    client = client_as("operator")
    hot = triage["hot"]
    response = client.post(f"/alerts/{hot.pk}/acknowledge/", {"next": "/alerts/?state=open"})
    assert response.status_code == 302 and response["Location"] == "/alerts/?state=open"
    hot.refresh_from_db()
    assert hot.state == "acknowledged" and hot.acknowledged_by.username == "op"
    client.post(f"/alerts/{hot.pk}/resolve/")
    hot.refresh_from_db()
    assert hot.state == "resolved"
    # An illegal transition is reported, not applied.
    page = client.post(f"/alerts/{hot.pk}/resolve/", follow=True).content.decode()
    assert "already resolved" in page
    assert client.get(f"/alerts/{hot.pk}/resolve/").status_code == 405
    # An off-site "next" is ignored.
    other = client.post(
        f"/alerts/{triage['warm'].pk}/acknowledge/", {"next": "https://evil.example/"}
    )
    assert other["Location"] == "/alerts/"


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["approver", "customer"])
def test_only_operators_may_post_actions(client_as, triage, role):
    hot = triage["hot"]
    for action in ("acknowledge", "resolve"):
        assert client_as(role).post(f"/alerts/{hot.pk}/{action}/").status_code == 403
    hot.refresh_from_db()
    assert hot.state == "firing"


@pytest.mark.django_db
def test_actions_enforce_csrf(users, triage):
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["operator"])
    assert client.post(f"/alerts/{triage['hot'].pk}/acknowledge/").status_code == 403
    triage["hot"].refresh_from_db()
    assert triage["hot"].state == "firing"


@pytest.mark.django_db
def test_csv_export_contains_the_filtered_rows(client_as, triage):
    response = client_as("operator").get("/alerts/?format=csv&state=open")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["id"] for r in rows] == [
        str(triage[k].pk) for k in ("hot", "chat", "warm", "asr")
    ]  # open only; critical first, then warning; newest first within a severity
    hot = rows[0]
    assert (hot["entity"], hot["severity"], hot["rule"]) == (
        "sn0/r0/n0/c0",
        "critical",
        "accelerator-temperature-critical",
    )
    assert float(hot["value"]) == 97.0 and float(hot["threshold"]) == 95.0
    assert rows[1]["tenant"] == "acme"


# --- API --------------------------------------------------------------------------------------


def api_ids(client, query: str = "") -> list[int]:
    response = client.get(f"/api/v1/alerts/{query}")
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


@pytest.mark.django_db
def test_api_scopes_alerts_to_the_customers_tenant(client_as, triage):
    assert api_ids(client_as("customer")) == [triage["chat"].pk]
    assert api_ids(client_as("other_customer")) == [triage["asr"].pk]
    assert set(api_ids(client_as("approver"))) == {a.pk for a in triage.values()}


@pytest.mark.django_db
def test_api_filters_and_describes_alerts(client_as, triage):
    client = client_as("operator")
    assert api_ids(client, "?severity=critical&state=open") == [
        triage["hot"].pk,
        triage["chat"].pk,
    ]
    assert api_ids(client, "?state=resolved") == [triage["old"].pk]
    row = client.get("/api/v1/alerts/?severity=warning&state=firing").json()["results"][0]
    assert row["entity"] == "sn0/r0/n0/c1" and row["rule"] == "accelerator-temperature-high"
    assert row["threshold"] == 85.0 and "cooling" in row["runbook"]
    bad = client.get("/api/v1/alerts/?state=sleeping&severity=loud")
    assert bad.status_code == 400 and set(bad.json()["errors"]) == {"state", "severity"}


@pytest.mark.django_db
def test_an_alert_written_by_an_english_worker_reads_in_chinese_on_a_chinese_page(
    rules, cards, client_as, settings
):
    write("accelerator_temperature_celsius", cards[0], every_30s(97.0))
    alerts_evaluate(now=NOW)
    alert = alerts_of("accelerator-temperature-high", cards[0]).get()
    assert " over " in alert.message  # stored in the worker's (default) language
    client = client_as("operator")
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    page = client.get("/alerts/").content.decode()
    assert escape(alert.message) not in page
    with translation.override("zh-hans"):
        assert "阈值" in alert.message_display and escape(alert.message_display) in page


@pytest.mark.django_db
def test_page_filters_by_cluster_tenant_and_name(client_as, triage, cluster):
    client = client_as("operator")
    ids = {key: f'id="alert-{alert.pk}"' for key, alert in triage.items()}
    named = client.get("/alerts/?name=acme-chat").content.decode()
    assert ids["chat"] in named and ids["asr"] not in named and ids["hot"] not in named
    tenant = triage["asr"].entity.tenant.slug
    by_tenant = client.get(f"/alerts/?tenant={tenant}").content.decode()
    assert ids["asr"] in by_tenant and ids["chat"] not in by_tenant
    by_cluster = client.get(f"/alerts/?cluster={cluster.name}").content.decode()
    assert all(marker in by_cluster for marker in ids.values())


@pytest.mark.django_db
def test_an_unknown_parameter_is_a_400_page_naming_it(client_as, triage):
    response = client_as("operator").get("/alerts/?severtiy=critical")
    assert response.status_code == 400
    assert "severtiy" in response.content.decode()
