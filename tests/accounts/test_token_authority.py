"""A token never does more than its owner: expiry, per-request checks, revocation on loss of
authority, and the append-only history of tokens."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import IntegrationToken, TokenEvent, User
from accounts.models.token_events import TokenEventImmutable
from accounts.services.authority import token_refusal, token_scope_refusal
from accounts.services.roles import ROLE_APPROVER, ROLE_OPERATOR, roles_ensure
from accounts.services.tokens import token_create, token_revoke, token_rotate

pytestmark = pytest.mark.django_db


def test_a_token_of_an_active_operator_may_act(users):
    token = token_create(name="t", scopes=["read", "ingest"], owner=users["operator"]).token
    assert token_refusal(token) is None
    assert token_scope_refusal(token, "ingest") is None


def test_an_ownerless_token_reads_and_ingests_but_never_approves():
    token = token_create(name="exporter", scopes=["read", "ingest", "approve"]).token
    assert token_scope_refusal(token, "ingest") is None
    assert token_scope_refusal(token, "approve").status == 403


def test_a_customer_token_is_refused_once_its_owner_leaves_the_tenant(users, tenants):
    customer = users["customer"]
    token = token_create(name="t", scopes=["read"], owner=customer, tenant=tenants["acme"]).token
    customer.tenant = tenants["panda"]
    refusal = token_refusal(token)
    assert refusal.status == 403 and refusal.cause == "owner_moved_tenant"


def test_a_staff_owner_may_hold_a_tenant_token(users, tenants):
    token = token_create(name="t", scopes=["read"], owner=users["operator"], tenant=tenants["acme"])
    assert token_refusal(token.token) is None


def test_a_token_cannot_be_issued_already_expired(users):
    with pytest.raises(Exception, match="future"):
        token_create(name="t", scopes=["read"], owner=users["operator"], expires_at=timezone.now())
    assert not IntegrationToken.objects.exists()


def test_rotating_an_expiring_token_keeps_its_lifetime_from_now(users):
    old = token_create(
        name="t",
        scopes=["read"],
        owner=users["operator"],
        expires_at=timezone.now() + timedelta(days=30),
    ).token
    new = token_rotate(token=old, created_by=users["operator"]).token
    left = new.expires_at - timezone.now()
    assert timedelta(days=29, hours=23) < left <= timedelta(days=30)
    causes = list(TokenEvent.objects.order_by("id").values_list("action", "cause"))
    assert causes == [("issued", "requested"), ("revoked", "rotated"), ("issued", "rotated")]


def test_an_expiry_beyond_the_maximum_lifetime_is_refused_naming_it(users, settings):
    settings.TOKEN_MAX_LIFETIME_DAYS = 90
    with pytest.raises(Exception, match="at most 90 days"):
        token_create(
            name="t",
            scopes=["read"],
            owner=users["operator"],
            expires_at=timezone.now() + timedelta(days=91),
        )
    assert not IntegrationToken.objects.exists()


@pytest.mark.parametrize("days", [0, 90])
def test_rotating_a_token_that_expires_in_year_9999_renews_it_within_bounds(users, settings, days):
    # Once a 500 (OverflowError): now + (9999-12-31 - created) is past the calendar's end.
    settings.TOKEN_MAX_LIFETIME_DAYS = 0
    far = timezone.now().replace(year=9999, month=12, day=30)
    old = token_create(name="t", scopes=["read"], owner=users["operator"], expires_at=far).token
    settings.TOKEN_MAX_LIFETIME_DAYS = days
    new = token_rotate(token=old, created_by=users["operator"]).token
    assert new.is_active and old.revoked_at is not None
    if days:
        assert new.expires_at - timezone.now() <= timedelta(days=90)
    else:
        assert new.expires_at.year == 9999


def test_the_api_rotates_a_far_future_token_without_a_500(client_as, users, settings):
    settings.TOKEN_MAX_LIFETIME_DAYS = 0
    far = timezone.now().replace(year=9999, month=6, day=1)
    old = token_create(name="t", scopes=["read"], owner=users["operator"], expires_at=far).token
    settings.TOKEN_MAX_LIFETIME_DAYS = 366
    answer = client_as("operator").post(f"/api/v1/tokens/{old.pk}/rotate/")
    assert answer.status_code == 201, answer.content
    assert answer.json()["expires_at"]


def test_the_api_issues_an_expiring_token_and_refuses_a_past_expiry(client_as):
    client = client_as("operator")
    soon = (timezone.now() + timedelta(hours=1)).isoformat()
    made = client.post(
        "/api/v1/tokens/",
        {"name": "t", "scopes": ["read"], "expires_at": soon},
        content_type="application/json",
    )
    assert made.status_code == 201 and made.json()["expires_at"]
    past = (timezone.now() - timedelta(hours=1)).isoformat()
    refused = client.post(
        "/api/v1/tokens/",
        {"name": "t2", "scopes": ["read"], "expires_at": past},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "expires_at" in refused.json()["errors"]
    assert IntegrationToken.objects.count() == 1


def test_the_token_list_filters_expired_tokens_out_of_the_active_ones(client_as, users):
    live = token_create(name="live", scopes=["read"], owner=users["operator"]).token
    dead = token_create(name="dead", scopes=["read"], owner=users["operator"]).token
    IntegrationToken.objects.filter(pk=dead.pk).update(expires_at=timezone.now())
    client = client_as("operator")
    active = client.get("/api/v1/tokens/?active=true").json()["results"]
    inactive = client.get("/api/v1/tokens/?active=false").json()["results"]
    assert [t["id"] for t in active] == [live.pk]
    assert [(t["id"], t["is_active"]) for t in inactive] == [(dead.pk, False)]


@pytest.mark.parametrize(
    ("text", "delta"),
    [("90d", timedelta(days=90)), ("12h", timedelta(hours=12)), ("2w", timedelta(weeks=2))],
)
def test_the_command_takes_a_lifetime_for_expires(text, delta):
    call_command(
        "create_integration_token", "--name", "x", "--scope", "ingest", "--expires", text,
        stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    left = IntegrationToken.objects.get().expires_at - timezone.now()
    assert delta - timedelta(minutes=1) < left <= delta


def test_the_command_takes_an_iso_date_time_and_names_a_bad_one(settings):
    settings.TOKEN_MAX_LIFETIME_DAYS = 0  # no maximum lifetime configured
    call_command(
        "create_integration_token", "--name", "x", "--scope", "read",
        "--expires", "2099-03-31T12:00+08:00", stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    assert IntegrationToken.objects.get().expires_at.isoformat() == "2099-03-31T04:00:00+00:00"
    for bad in ("soon", "2099-13-01", "2020-01-01"):
        with pytest.raises(CommandError, match="expir|future"):
            call_command(
                "create_integration_token", "--name", "y", "--scope", "read", "--expires", bad,
                stdout=io.StringIO(), stderr=io.StringIO(),
            )  # fmt: skip
    assert IntegrationToken.objects.count() == 1


def test_losing_a_group_revokes_the_tokens_it_backed_once_committed(
    users, django_capture_on_commit_callbacks
):
    owner = users["operator"]
    ingest = token_create(name="i", scopes=["ingest"], owner=owner).token
    with django_capture_on_commit_callbacks(execute=True):
        owner.groups.clear()
    ingest.refresh_from_db()
    assert ingest.revoked_at is not None
    event = TokenEvent.objects.get(action="revoked")
    assert (event.cause, event.owner_username) == ("owner_role_lost", owner.username)


def test_swapping_groups_decides_on_the_final_state(users, django_capture_on_commit_callbacks):
    groups = roles_ensure()
    owner = users["approver"]
    token = token_create(name="r", scopes=["read"], owner=owner).token
    # set() removes the approver group before it adds the operator one; both see every tenant.
    with django_capture_on_commit_callbacks(execute=True):
        owner.groups.set([groups[ROLE_OPERATOR]])
    token.refresh_from_db()
    assert token.revoked_at is None


def test_removing_a_permission_from_a_group_revokes_its_members_tokens(
    users, django_capture_on_commit_callbacks
):
    from django.contrib.auth.models import Permission

    group = roles_ensure()[ROLE_APPROVER]
    token = token_create(name="a", scopes=["approve"], owner=users["approver"]).token
    with django_capture_on_commit_callbacks(execute=True):
        group.permissions.remove(Permission.objects.get(codename="approve_migrations"))
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_moving_a_customer_revokes_their_old_tenants_tokens(
    users, tenants, django_capture_on_commit_callbacks
):
    customer = users["customer"]
    token = token_create(name="t", scopes=["read"], owner=customer, tenant=tenants["acme"]).token
    with django_capture_on_commit_callbacks(execute=True):
        customer.tenant = tenants["panda"]
        customer.save()
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert TokenEvent.objects.get(action="revoked").cause == "owner_moved_tenant"


def test_an_unrelated_save_revokes_nothing(users, django_capture_on_commit_callbacks):
    owner = users["operator"]
    token = token_create(name="t", scopes=["read", "ingest"], owner=owner).token
    with django_capture_on_commit_callbacks(execute=True):
        owner.first_name = "Ada"
        owner.save()
    token.refresh_from_db()
    assert token.revoked_at is None


def test_revoking_through_the_api_is_recorded_with_who_did_it(client_as, users):
    token = token_create(name="t", scopes=["read"], owner=users["operator"]).token
    assert client_as("operator").post(f"/api/v1/tokens/{token.pk}/revoke/").status_code == 200
    event = TokenEvent.objects.get(action="revoked")
    assert (event.cause, event.actor_username) == ("requested", users["operator"].username)


def test_token_events_are_append_only(users):
    token = token_create(name="t", scopes=["read"], owner=users["operator"]).token
    token_revoke(token=token)
    event = TokenEvent.objects.first()
    with pytest.raises(TokenEventImmutable):
        event.save()
    with pytest.raises(TokenEventImmutable):
        event.delete()


def test_a_reactivated_owner_does_not_resurrect_a_revoked_token(
    users, django_capture_on_commit_callbacks
):
    owner = users["operator"]
    issued = token_create(name="t", scopes=["read"], owner=owner)
    with django_capture_on_commit_callbacks(execute=True):
        owner.is_active = False
        owner.save()
    owner.is_active = True
    owner.save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert client.get("/api/v1/me/").status_code == 401
    assert User.objects.get(pk=owner.pk).is_active


def test_deleting_a_token_in_the_admin_leaves_an_event_naming_who(client_as, users):
    token = token_create(name="gone", scopes=["read"], owner=users["operator"]).token
    admin = client_as("operator")
    users["operator"].is_superuser = True
    users["operator"].save()
    answer = admin.post(
        "/admin/monitoring/integrationtoken/",
        {"action": "delete_selected", "_selected_action": [token.pk], "post": "yes"},
    )
    assert answer.status_code == 302
    assert not IntegrationToken.objects.filter(pk=token.pk).exists()
    event = TokenEvent.objects.get(token_id=token.pk, action="deleted")
    assert event.actor_username == users["operator"].username
    assert event.detail == "deleted while still active"


def test_deleting_a_token_anywhere_else_leaves_an_event_too(users):
    token = token_create(name="gone", scopes=["read"], owner=users["operator"]).token
    IntegrationToken.objects.filter(pk=token.pk).delete()
    assert TokenEvent.objects.filter(token_id=token.pk, action="deleted").count() == 1
