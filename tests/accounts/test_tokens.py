"""Integration tokens: issued once by a command, stored hashed, scoped, revocable."""

from __future__ import annotations

import hashlib
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient, APIRequestFactory
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.models import IntegrationToken
from accounts.services.tokens import token_create, token_revoke, token_rotate


def create_via_command(*args: str) -> str:
    out, err = StringIO(), StringIO()
    call_command("create_integration_token", *args, stdout=out, stderr=err)
    assert "shown once" in err.getvalue()
    return out.getvalue().strip()


@pytest.mark.django_db
def test_command_prints_the_token_once_and_stores_only_its_hash(tenants):
    plaintext = create_via_command("--name", "dcgm", "--scope", "ingest", "--tenant", "acme")
    token = IntegrationToken.objects.get(name="dcgm")
    assert token.tenant.slug == "acme"
    assert token.scopes == ["ingest"]
    assert token.secret_hash == hashlib.sha256(plaintext.encode()).hexdigest()
    stored = [str(v) for v in IntegrationToken.objects.values_list(flat=False).get()]
    assert all(plaintext not in value for value in stored)


@pytest.mark.django_db
def test_command_names_an_unknown_tenant_and_writes_nothing(tenants):
    with pytest.raises(CommandError, match="Unknown tenant 'nope'"):
        create_via_command("--name", "x", "--scope", "read", "--tenant", "nope")
    assert not IntegrationToken.objects.exists()


@pytest.mark.django_db
def test_command_rejects_an_unknown_scope():
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("create_integration_token", "--name", "x", "--scope", "root")
    assert not IntegrationToken.objects.exists()


@pytest.mark.django_db
def test_a_valid_token_authenticates_and_reports_its_scopes(tenants):
    issued = token_create(name="reader", scopes=["read"], tenant=tenants["panda"])
    client = APIClient()
    response = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert response.status_code == 200
    assert response.json() == {
        "kind": "token",
        "name": "reader",
        "tenant": "panda",
        "scopes": ["read"],
    }


@pytest.mark.django_db
def test_a_revoked_or_forged_token_gets_401(tenants):
    issued = token_create(name="reader", scopes=["read"])
    forged = issued.plaintext[:-3] + "xyz"
    client = APIClient()
    assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {forged}").status_code == 401
    token_revoke(token=issued.token)
    response = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]


@pytest.mark.django_db
def test_rotation_revokes_the_old_secret_and_issues_a_working_one(tenants):
    old = token_create(name="scraper", scopes=["ingest", "read"], tenant=tenants["acme"])
    new = token_rotate(token=old.token)
    client = APIClient()
    assert (
        client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {old.plaintext}").status_code == 401
    )
    response = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {new.plaintext}")
    assert response.status_code == 200
    assert response.json()["scopes"] == ["ingest", "read"]


class IngestOnlyView(APIView):
    permission_classes = [HasRequiredScope]
    required_scope = "ingest"

    def get(self, request):
        from rest_framework.response import Response

        return Response({"ok": True})


@pytest.mark.django_db
@pytest.mark.parametrize(("scopes", "expected"), [(["ingest"], 200), (["read", "approve"], 403)])
def test_scope_is_enforced_for_tokens(scopes, expected):
    issued = token_create(name="t", scopes=scopes)
    request = APIRequestFactory().get("/x", HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    response = IngestOnlyView.as_view()(request)
    assert response.status_code == expected
    if expected == 403:
        assert "'ingest' scope" in str(response.data["detail"])


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("role", "expected"), [("operator", 200), ("approver", 403), ("customer", 403)]
)
def test_session_users_get_ingest_only_as_operators(users, role, expected):
    request = APIRequestFactory().get("/x")
    from rest_framework.test import force_authenticate

    force_authenticate(request, user=users[role])
    assert IngestOnlyView.as_view()(request).status_code == expected
