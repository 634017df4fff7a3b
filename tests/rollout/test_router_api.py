"""Traffic routers in the API (issue 34): operators create, change and delete them at
``/api/v1/traffic-routers/`` through the admin's own service; a ``read`` token reads them,
customers see nothing of them; the webhook secret's variable is never answered; bad input is a
400 naming the field and writes nothing; a router a plan names cannot be deleted."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from rollout.models import AuditEntry, MigrationPlan, PlanState, TrafficRouter
from rollout.services.audit import Actor
from rollout.services.routers import router_create
from tests.access import ApiAccessCases
from tests.rollout.conftest import plan_for_access

LIST = "/api/v1/traffic-routers/"
SECRET_REF = "PORTAL_ROUTER_SECRET_VERY_PRIVATE_NAME"
HAPROXY = {
    "name": "edge-gw",
    "kind": "haproxy",
    "haproxy_address": "unix:/run/haproxy/admin.sock",
    "haproxy_backend": "llm",
    "haproxy_source_server": "baseline",
    "haproxy_target_server": "canary",
}
WEBHOOK = {
    "name": "argo",
    "kind": "webhook",
    "webhook_url": "https://deploy.example.com/hooks/portal",
    "webhook_secret_ref": SECRET_REF,
}


def _router(**changes) -> TrafficRouter:
    return router_create(actor=Actor(None), **{**HAPROXY, **changes})


def _url(router: TrafficRouter) -> str:
    return f"{LIST}{router.pk}/"


def _post(client, body: dict, url: str = LIST, method: str = "post"):
    return client.generic(method.upper(), url, json.dumps(body), content_type="application/json")


def _token_client(scopes: list[str], **kwargs) -> APIClient:
    client = APIClient()
    issued = token_create(name="t", scopes=scopes, **kwargs)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    return client


class TestTrafficRouterListAccess(ApiAccessCases):
    route = "rollout-api:traffic-routers"
    url = LIST
    allowed_roles = ("operator",)


class TestTrafficRouterCreateAccess(ApiAccessCases):
    """Only operators create; the others are refused before the body is read."""

    route = "rollout-api:traffic-routers"
    url = LIST
    method = "post"
    allowed_roles = ("operator",)

    def post_data(self, users) -> dict:
        return HAPROXY

    def expect_allowed(self, role: str, response) -> None:
        assert response.status_code == 201, f"{role} got {response.status_code}"


class TestTrafficRouterDetailAccess(ApiAccessCases):
    route = "rollout-api:traffic-router"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return _url(_router())


class TestTrafficRouterDeleteAccess(ApiAccessCases):
    route = "rollout-api:traffic-router"
    method = "delete"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return _url(_router())

    def expect_allowed(self, role: str, response) -> None:
        assert response.status_code == 204, f"{role} got {response.status_code}"


@pytest.mark.django_db
def test_an_operator_creates_lists_updates_and_deletes_a_router_and_each_is_audited(
    client_as, users
):
    client = client_as("operator")
    created = _post(client, HAPROXY)
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["name"] == "edge-gw" and body["kind"] == "haproxy"
    assert body["has_webhook_secret"] is False and body["plans"] == []
    url = f"{LIST}{body['id']}/"
    listed = client.get(LIST).json()["results"]
    assert [r["name"] for r in listed] == ["edge-gw"]
    changed = _post(client, {"timeout_seconds": 2.5}, url, "patch")
    assert changed.status_code == 200, changed.content
    assert TrafficRouter.objects.get().timeout_seconds == 2.5
    replaced = _post(client, {**HAPROXY, "haproxy_backend": "chat"}, url, "put")
    assert replaced.status_code == 200, replaced.content
    assert client.get(url).json()["haproxy_backend"] == "chat"
    assert client.delete(url).status_code == 204
    assert not TrafficRouter.objects.exists()
    actions = list(
        AuditEntry.objects.filter(object_type="trafficrouter").values_list("action", flat=True)
    )
    assert sorted(actions) == ["router_create", "router_delete", "router_update", "router_update"]
    assert all(e.actor == users["operator"] for e in AuditEntry.objects.all())


@pytest.mark.django_db
def test_the_webhook_secret_variable_is_write_only_and_never_answered(client_as):
    client = client_as("operator")
    created = _post(client, WEBHOOK)
    assert created.status_code == 201, created.content
    assert created.json()["has_webhook_secret"] is True
    assert "webhook_secret_ref" not in created.json()
    url = f"{LIST}{created.json()['id']}/"
    renamed = _post(client, {"webhook_secret_ref": SECRET_REF + "_2"}, url, "patch")
    assert renamed.status_code == 200, renamed.content
    assert TrafficRouter.objects.get().webhook_secret_ref == SECRET_REF + "_2"
    for answer in (created, renamed, client.get(url), client.get(LIST)):
        assert SECRET_REF not in answer.content.decode()
    # Nor in the audit trail: field names only.
    reasons = " ".join(AuditEntry.objects.values_list("reason", flat=True))
    assert "webhook_secret_ref" in reasons and SECRET_REF not in reasons


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**HAPROXY, "kind": "nginx"}, "kind"),
        ({**HAPROXY, "haproxy_address": "nowhere"}, "haproxy_address"),
        ({**HAPROXY, "haproxy_address": "unix:/var/run/postgresql/.s.PGSQL.5432"}, "haproxy_address"),
        ({**HAPROXY, "haproxy_address": ""}, "haproxy_address"),
        ({k: v for k, v in HAPROXY.items() if k != "haproxy_backend"}, "haproxy_backend"),
        ({**HAPROXY, "haproxy_target_server": "baseline"}, "haproxy_target_server"),
        ({**WEBHOOK, "webhook_url": "not a url"}, "webhook_url"),
        ({**WEBHOOK, "webhook_url": "ftp://deploy.example.com/"}, "webhook_url"),
        ({k: v for k, v in WEBHOOK.items() if k != "webhook_url"}, "webhook_url"),
        ({**WEBHOOK, "webhook_secret_ref": "SECRET_KEY"}, "webhook_secret_ref"),
        ({k: v for k, v in WEBHOOK.items() if k != "webhook_secret_ref"}, "webhook_secret_ref"),
        ({**HAPROXY, "timeout_seconds": 999}, "timeout_seconds"),
        ({k: v for k, v in HAPROXY.items() if k != "name"}, "name"),
    ],
)  # fmt: skip
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(client_as, body, field):
    answer = _post(client_as("operator"), body)
    assert answer.status_code == 400, answer.content
    assert field in answer.json()["errors"], answer.json()
    assert not TrafficRouter.objects.exists() and not AuditEntry.objects.exists()


@pytest.mark.django_db
def test_a_second_router_of_the_same_name_is_a_400(client_as):
    _router()
    answer = _post(client_as("operator"), HAPROXY)
    assert answer.status_code == 400 and "name" in answer.json()["errors"]
    assert TrafficRouter.objects.count() == 1


@pytest.mark.django_db
def test_a_bad_update_is_a_400_and_changes_nothing(client_as):
    router = _router()
    before = AuditEntry.objects.count()
    # Turning it into a webhook router without a URL or a secret: both named.
    answer = _post(client_as("operator"), {"kind": "webhook"}, _url(router), "patch")
    assert answer.status_code == 400
    assert {"webhook_url", "webhook_secret_ref"} <= set(answer.json()["errors"])
    router.refresh_from_db()
    assert router.kind == "haproxy" and AuditEntry.objects.count() == before


@pytest.mark.django_db
@pytest.mark.parametrize("through", ["plan", "workload"])
def test_deleting_a_router_a_running_plan_uses_is_a_409_naming_the_plan(client_as, users, through):
    router = _router()
    plan = plan_for_access()
    if through == "plan":
        MigrationPlan.objects.filter(pk=plan.pk).update(router=router, state=PlanState.RUNNING)
    else:
        plan.workloads.update(router=router)
        MigrationPlan.objects.filter(pk=plan.pk).update(state=PlanState.RUNNING)
    client = client_as("operator")
    assert client.get(_url(router)).json()["plans"] == [plan.pk]
    before = AuditEntry.objects.count()
    answer = client.delete(_url(router))
    assert answer.status_code == 409, answer.content
    assert answer.json()["code"] == "conflict" and answer.json()["plans"] == [plan.pk]
    assert "access-acme" in answer.json()["detail"] and "edge-gw" in answer.json()["detail"]
    assert TrafficRouter.objects.filter(pk=router.pk).exists()
    assert AuditEntry.objects.count() == before


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["customer", "other_customer", "approver"])
def test_only_operators_see_or_change_routers(client_as, users, role):
    router = _router()
    client = client_as(role)
    for answer in (
        client.get(LIST),
        client.get(_url(router)),
        _post(client, {**HAPROXY, "name": "mine"}),
        _post(client, {"timeout_seconds": 1}, _url(router), "patch"),
        client.delete(_url(router)),
    ):
        assert answer.status_code == 403, (role, answer.status_code)
        assert (
            "edge-gw" not in answer.content.decode()
            and "/run/haproxy" not in answer.content.decode()
        )
    assert list(TrafficRouter.objects.values_list("name", "timeout_seconds")) == [("edge-gw", 5.0)]


@pytest.mark.django_db
def test_a_tenant_bound_token_sees_no_routers(users, tenants):
    router = _router()
    client = _token_client(["read"], tenant=tenants["acme"], owner=users["customer"])
    for answer in (client.get(LIST), client.get(_url(router))):
        assert answer.status_code == 403 and "edge-gw" not in answer.content.decode()


@pytest.mark.django_db
def test_a_read_token_lists_routers_but_cannot_change_them(users):
    router = _router(**WEBHOOK)
    client = _token_client(["read"])
    listed = client.get(LIST)
    assert listed.status_code == 200
    assert [r["name"] for r in listed.json()["results"]] == ["argo"]
    assert SECRET_REF not in listed.content.decode()
    assert client.patch(_url(router), {"max_attempts": 1}, format="json").status_code == 403
    assert client.post(LIST, {**HAPROXY}, format="json").status_code == 403
    assert client.delete(_url(router)).status_code == 403
    router.refresh_from_db()
    assert router.max_attempts == 3 and TrafficRouter.objects.count() == 1


@pytest.mark.django_db
def test_anonymous_callers_are_refused(db):
    router = _router()
    client = APIClient()
    assert client.get(LIST).status_code in (401, 403)
    assert client.delete(_url(router)).status_code in (401, 403)
    assert TrafficRouter.objects.exists()


@pytest.mark.django_db
def test_the_admin_saves_and_deletes_through_the_same_service(client, users):
    boss = type(users["operator"]).objects.create_superuser("boss", password="x")
    client.force_login(boss)
    form = {
        **HAPROXY,
        "webhook_url": "",
        "webhook_secret_ref": "",
        "timeout_seconds": 5,
        "max_attempts": 3,
        "confirm_within_seconds": 300,
        "split_tolerance_points": 5,
        "split_window_seconds": 30,
        "split_min_requests": 20,
    }
    added = client.post("/admin/rollout/trafficrouter/add/", form)
    assert added.status_code == 302, added.content.decode()[:2000]
    router = TrafficRouter.objects.get()
    change = f"/admin/rollout/trafficrouter/{router.pk}/change/"
    assert client.post(change, {**form, "max_attempts": 2}).status_code == 302
    assert TrafficRouter.objects.get().max_attempts == 2
    # The model's validation refuses a bad change in the admin as in the API.
    refused = client.post(change, {**form, "haproxy_address": "nowhere"})
    assert (
        refused.status_code == 200
        and TrafficRouter.objects.get().haproxy_address == form["haproxy_address"]
    )
    delete = f"/admin/rollout/trafficrouter/{router.pk}/delete/"
    assert client.post(delete, {"post": "yes"}).status_code == 302
    assert not TrafficRouter.objects.exists()
    actions = AuditEntry.objects.filter(object_type="trafficrouter").values_list(
        "action", flat=True
    )
    assert sorted(actions) == ["router_create", "router_delete", "router_update"]
    assert all(e.actor == boss for e in AuditEntry.objects.all())
