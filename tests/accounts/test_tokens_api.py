"""Token management API: who may manage tokens, tenant isolation, secrets shown once,
rotation and revocation that really stop the old secret."""

from __future__ import annotations

import hashlib

import pytest
from rest_framework.test import APIClient

from accounts.models import IntegrationToken
from accounts.services.tokens import token_create
from tests.access import ALL_ROLES, ApiAccessCases

JSON = "application/json"
MANAGERS = ("operator", "customer", "other_customer")


def bearer(plaintext: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client


def panda_token() -> IntegrationToken:
    from accounts.models import Tenant

    return token_create(
        name="panda-exporter", scopes=["read"], tenant=Tenant.objects.get(slug="panda")
    ).token


def acme_token() -> IntegrationToken:
    from accounts.models import Tenant

    return token_create(
        name="acme-exporter", scopes=["read"], tenant=Tenant.objects.get(slug="acme")
    ).token


# --- the access mixin: every route, every role, and the other tenant's token ------------------


class TestTokenListAccess(ApiAccessCases):
    route = "api:tokens"
    url = "/api/v1/tokens/"
    allowed_roles = MANAGERS

    def list_markers(self, users, tenants) -> list[str]:
        acme_token()
        panda, wide = panda_token(), token_create(name="operator-wide", scopes=["ingest"]).token
        return [panda.name, panda.prefix, wide.name, wide.prefix]

    def other_tenant_payload(self, users, tenants) -> dict:
        return {"name": "sneaky", "scopes": ["read"], "tenant": "panda"}


class TestTokenDetailAccess(ApiAccessCases):
    route = "api:token"
    allowed_roles = MANAGERS
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/api/v1/tokens/{acme_token().pk}/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/api/v1/tokens/{panda_token().pk}/"


class TestTokenRotateAccess(ApiAccessCases):
    route = "api:token-rotate"
    method = "post"
    allowed_roles = MANAGERS
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/api/v1/tokens/{acme_token().pk}/rotate/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/api/v1/tokens/{panda_token().pk}/rotate/"


class TestTokenRevokeAccess(ApiAccessCases):
    route = "api:token-revoke"
    method = "post"
    allowed_roles = MANAGERS
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/api/v1/tokens/{acme_token().pk}/revoke/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/api/v1/tokens/{panda_token().pk}/revoke/"


# --- creating ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_customer_creates_a_token_for_their_tenant_and_sees_the_secret_once(client_as, users):
    client = client_as("customer")
    response = client.post(
        "/api/v1/tokens/", {"name": "grafana", "scopes": ["read"]}, content_type=JSON
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["tenant"] == "acme" and body["scopes"] == ["read"] and body["is_active"]
    assert body["created_by"] == "cust-acme"
    plaintext = body["token"]
    assert plaintext.startswith(f"cp_{body['prefix']}_")
    assert "secret_hash" not in body
    stored = IntegrationToken.objects.get(pk=body["id"])
    assert stored.tenant.slug == "acme"
    assert stored.secret_hash == hashlib.sha256(plaintext.encode()).hexdigest()
    # The new secret works, and is never shown again.
    assert bearer(plaintext).get("/api/v1/me/").json()["tenant"] == "acme"
    again = client.get(f"/api/v1/tokens/{body['id']}/").json()
    listed = client.get("/api/v1/tokens/").content.decode()
    assert "token" not in again and plaintext not in listed
    assert stored.secret_hash not in listed


@pytest.mark.django_db
@pytest.mark.parametrize("tenant", ["panda", "nope", None, ""])
def test_a_customer_cannot_name_another_tenant_or_none(client_as, users, tenant):
    response = client_as("customer").post(
        "/api/v1/tokens/", {"name": "x", "scopes": ["read"], "tenant": tenant}, content_type=JSON
    )
    assert response.status_code == 400
    body = response.json()
    # The same answer for an existing and a made-up tenant: nothing is revealed.
    assert body["errors"] == {"tenant": ["You can only create tokens for your own tenant."]}
    assert not IntegrationToken.objects.exists()


@pytest.mark.django_db
def test_a_customer_may_name_their_own_tenant(client_as, users):
    response = client_as("customer").post(
        "/api/v1/tokens/", {"name": "x", "scopes": ["read"], "tenant": "acme"}, content_type=JSON
    )
    assert response.status_code == 201 and response.json()["tenant"] == "acme"


@pytest.mark.django_db
def test_an_operator_creates_operator_level_or_tenant_tokens(client_as, users):
    client = client_as("operator")
    wide = client.post("/api/v1/tokens/", {"name": "dcgm", "scopes": ["ingest"]}, content_type=JSON)
    assert wide.status_code == 201 and wide.json()["tenant"] is None
    bound = client.post(
        "/api/v1/tokens/", {"name": "p", "scopes": ["read"], "tenant": "panda"}, content_type=JSON
    )
    assert bound.status_code == 201 and bound.json()["tenant"] == "panda"
    unknown = client.post(
        "/api/v1/tokens/", {"name": "p", "scopes": ["read"], "tenant": "nope"}, content_type=JSON
    )
    assert unknown.status_code == 400
    assert unknown.json()["errors"] == {"tenant": ["Unknown tenant 'nope'."]}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("role", "payload", "field", "message"),
    [
        ("operator", {"scopes": ["read"]}, "name", "This field is required."),
        ("operator", {"name": "x"}, "scopes", "This field is required."),
        ("operator", {"name": "x", "scopes": []}, "scopes", "This list may not be empty."),
        ("operator", {"name": "x", "scopes": ["root"]}, "scopes", '"root" is not a valid choice.'),
        ("operator", {"name": "x" * 101, "scopes": ["read"]}, "name", "no more than 100"),
        # Nobody grants a scope they do not hold themselves.
        ("operator", {"name": "x", "scopes": ["approve"]}, "scopes", "do not hold: approve"),
        ("customer", {"name": "x", "scopes": ["read", "ingest"]}, "scopes", "do not hold: ingest"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(
    client_as, users, role, payload, field, message
):
    response = client_as(role).post("/api/v1/tokens/", payload, content_type=JSON)
    assert response.status_code == 400
    body = response.json()
    assert list(body["errors"]) == [field]
    assert message in " ".join(body["errors"][field]), body
    assert not IntegrationToken.objects.exists()


@pytest.mark.django_db
def test_a_superuser_may_issue_approve_tokens(client, users):
    from accounts.models import User

    client.force_login(User.objects.create_superuser("root", "r@example.com", "x"))
    response = client.post(
        "/api/v1/tokens/", {"name": "ci", "scopes": ["approve"]}, content_type=JSON
    )
    assert response.status_code == 201 and response.json()["scopes"] == ["approve"]


# --- listing and isolation ----------------------------------------------------------------------


@pytest.mark.django_db
def test_lists_are_scoped_and_filterable(client_as, users):
    acme, panda = acme_token(), panda_token()
    wide = token_create(name="wide", scopes=["ingest"]).token
    IntegrationToken.objects.filter(pk=panda.pk).update(revoked_at="2030-01-01T00:00Z")

    def names(role: str, query: str = "") -> set[str]:
        body = client_as(role).get(f"/api/v1/tokens/{query}").json()
        return {row["name"] for row in body["results"]}

    assert names("operator") == {acme.name, panda.name, wide.name}
    assert names("operator", "?active=true") == {acme.name, wide.name}
    assert names("operator", "?active=false") == {panda.name}
    assert names("operator", "?tenant=panda") == {panda.name}
    assert names("customer") == {acme.name}
    assert names("customer", "?tenant=panda") == set()
    assert names("other_customer") == {panda.name}


@pytest.mark.django_db
@pytest.mark.parametrize("suffix", ["", "rotate/", "revoke/"])
def test_an_operator_level_token_is_invisible_to_customers(client_as, users, suffix):
    wide = token_create(name="wide", scopes=["ingest"]).token
    client = client_as("customer")
    url = f"/api/v1/tokens/{wide.pk}/{suffix}"
    response = client.post(url) if suffix else client.get(url)
    assert response.status_code == 404
    wide.refresh_from_db()
    assert wide.is_active


@pytest.mark.django_db
def test_another_tenants_token_cannot_be_rotated_or_revoked(client_as, users):
    panda = token_create(name="p", scopes=["read"], tenant=users["other_customer"].tenant)
    client = client_as("customer")
    assert client.post(f"/api/v1/tokens/{panda.token.pk}/rotate/").status_code == 404
    assert client.post(f"/api/v1/tokens/{panda.token.pk}/revoke/").status_code == 404
    assert bearer(panda.plaintext).get("/api/v1/me/").status_code == 200
    assert IntegrationToken.objects.count() == 1


# --- rotation and revocation ------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["operator", "customer"])
def test_rotation_issues_a_new_secret_and_the_old_one_gets_401(client_as, users, role):
    issued = token_create(name="scraper", scopes=["read"], tenant=users["customer"].tenant)
    old_client = bearer(issued.plaintext)
    assert old_client.get("/api/v1/me/").status_code == 200

    response = client_as(role).post(f"/api/v1/tokens/{issued.token.pk}/rotate/")
    assert response.status_code == 201
    body = response.json()
    assert body["replaces"] == issued.token.pk and body["id"] != issued.token.pk
    assert body["name"] == "scraper" and body["tenant"] == "acme" and body["scopes"] == ["read"]

    refused = old_client.get("/api/v1/me/")
    assert refused.status_code == 401
    assert "revoked" in refused.json()["detail"]
    assert bearer(body["token"]).get("/api/v1/me/").json()["name"] == "scraper"
    # The old row stays, revoked, for the record; rotating it again is a conflict.
    old = client_as(role).get(f"/api/v1/tokens/{issued.token.pk}/").json()
    assert old["is_active"] is False and old["revoked_at"]
    again = client_as(role).post(f"/api/v1/tokens/{issued.token.pk}/rotate/")
    assert again.status_code == 409 and again.json()["code"] == "conflict"


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["operator", "customer"])
def test_revocation_makes_the_secret_a_401_at_once(client_as, users, role):
    issued = token_create(name="scraper", scopes=["read"], tenant=users["customer"].tenant)
    client = bearer(issued.plaintext)
    assert client.get("/api/v1/alerts/").status_code == 200

    response = client_as(role).post(f"/api/v1/tokens/{issued.token.pk}/revoke/")
    assert response.status_code == 200
    revoked_at = response.json()["revoked_at"]
    assert response.json()["is_active"] is False and revoked_at
    assert client.get("/api/v1/alerts/").status_code == 401
    # Revoking again changes nothing.
    again = client_as(role).post(f"/api/v1/tokens/{issued.token.pk}/revoke/")
    assert again.status_code == 200 and again.json()["revoked_at"] == revoked_at


# --- a token never manages tokens ---------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("tenant", [None, "acme"])
def test_a_token_cannot_list_create_rotate_or_revoke_tokens(tenants, tenant):
    issued = token_create(
        name="all", scopes=["ingest", "read", "approve"], tenant=tenants.get(tenant or "")
    )
    client = bearer(issued.plaintext)
    pk = issued.token.pk
    answers = [
        client.get("/api/v1/tokens/"),
        client.post("/api/v1/tokens/", {"name": "child", "scopes": ["read"]}, format="json"),
        client.get(f"/api/v1/tokens/{pk}/"),
        client.post(f"/api/v1/tokens/{pk}/rotate/"),
        client.post(f"/api/v1/tokens/{pk}/revoke/"),
    ]
    assert [a.status_code for a in answers] == [403] * 5
    assert "cannot manage tokens" in answers[0].json()["detail"]
    assert IntegrationToken.objects.count() == 1
    assert bearer(issued.plaintext).get("/api/v1/me/").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("role", ALL_ROLES)
def test_only_managers_reach_the_endpoints(client_as, users, role):
    response = client_as(role).post(
        "/api/v1/tokens/", {"name": "x", "scopes": ["read"]}, content_type=JSON
    )
    assert response.status_code == (201 if role in MANAGERS else 403)
