"""Access checks for one alert and its triage commands (acknowledge, resolve), page and API.

Triage is for operators only.

Alerts on a tenant's workload carry that tenant, but only operators triage, and operators see
every tenant; everyone else gets 403 before any alert is looked up.
"""

from __future__ import annotations

import pytest

from accounts.models import Tenant
from alerts.defaults import alert_rules_ensure
from alerts.models import Alert, AlertRule
from inventory.models import Cluster, Workload
from telemetry.models import Entity
from tests.access import ApiAccessCases, PageAccessCases

NOW = "2030-01-01T12:00:00Z"


def alert_of(tenant: str) -> Alert:
    """A firing SLO alert on a workload of ``tenant`` (its key: ``<tenant>-svc``)."""
    alert_rules_ensure()
    rule = AlertRule.objects.get(name="slo-fast-burn")
    owner = Tenant.objects.get(slug=tenant)
    cluster, _ = Cluster.objects.get_or_create(
        name="alerts-access", defaults={"kind": Cluster.Kind.UNIFIED}
    )
    workload = Workload.objects.create(
        tenant=owner, cluster=cluster, name=f"{tenant}-svc", kind=Workload.Kind.INFERENCE
    )
    entity = Entity.objects.create(
        cluster=cluster, kind="workload", key=workload.name, workload=workload, tenant=owner
    )
    return Alert.objects.create(
        rule=rule,
        entity=entity,
        tenant=owner,
        severity=rule.severity,
        value=0.8,
        message=f"{entity.key}: burning",
        first_seen=NOW,
        last_seen=NOW,
    )


class TestAlertAcknowledgeAccess(PageAccessCases):
    route = "alert-acknowledge"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return f"/alerts/{alert_of('acme').pk}/acknowledge/"


class TestAlertResolveAccess(PageAccessCases):
    route = "alert-resolve"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return f"/alerts/{alert_of('acme').pk}/resolve/"


@pytest.mark.django_db
@pytest.mark.parametrize("command", ["acknowledge", "resolve"])
@pytest.mark.parametrize("role", ["approver", "customer", "other_customer"])
def test_a_refused_triage_changes_nothing(client_as, users, command, role):
    alert = alert_of("acme")
    assert client_as(role).post(f"/alerts/{alert.pk}/{command}/").status_code == 403
    alert.refresh_from_db()
    assert alert.state == "firing"


@pytest.mark.django_db
def test_an_operator_triages_any_tenants_alert(client_as, users):
    alert = alert_of("panda")
    assert client_as("operator").post(f"/alerts/{alert.pk}/acknowledge/").status_code == 302
    alert.refresh_from_db()
    assert alert.state == "acknowledged"


# --- the same over the API --------------------------------------------------------------------


class TestAlertDetailApi(ApiAccessCases):
    route = "api:alert"
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/api/v1/alerts/{alert_of('acme').pk}/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/api/v1/alerts/{alert_of('panda').pk}/"


class TestAlertCommandApi(ApiAccessCases):
    """Operators only; another tenant's alert is a 404 before the role is checked."""

    route = "api:alert-command"
    method = "post"
    allowed_roles = ("operator",)
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/api/v1/alerts/{alert_of('acme').pk}/acknowledge/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/api/v1/alerts/{alert_of('panda').pk}/resolve/"


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["approver", "customer"])
def test_a_refused_api_triage_changes_nothing(client_as, users, role):
    alert = alert_of("acme")
    assert client_as(role).post(f"/api/v1/alerts/{alert.pk}/resolve/").status_code == 403
    alert.refresh_from_db()
    assert alert.state == "firing"
