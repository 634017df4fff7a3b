"""Attacks on four-eyes and the command path (issue 15 §1–3, §9), each replayed once."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.models import User
from accounts.services.roles import ROLE_APPROVER, roles_ensure
from accounts.services.tokens import token_create
from rollout.models import Approval, AuditEntry, Criterion, PlanState
from rollout.services.audit import Actor
from rollout.services.criteria import criterion_save
from rollout.services.transitions import plan_promote, plan_start
from tests.rollout.conftest import METRIC, rev


def bearer(plaintext: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client


def command(client, plan, name, **body):
    return client.post(f"/api/v1/plans/{plan.pk}/{name}/", body, content_type="application/json")


def awaiting(plan_factory, users, **kwargs):
    plan = plan_factory(**kwargs)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    return plan


@pytest.mark.parametrize("role", ["operator", "customer"])
def test_rotating_an_approve_token_you_could_not_create_is_refused_and_yields_no_secret(
    client_as, users, role
):
    victim = token_create(
        name="ci-approve", scopes=["approve"], owner=users["approver"], tenant=None
    )
    if role == "customer":
        victim = token_create(
            name="acme-approve",
            scopes=["read", "approve"],
            owner=users["approver"],
            tenant=users["customer"].tenant,
        )
    response = client_as(role).post(f"/api/v1/tokens/{victim.token.pk}/rotate/")
    assert response.status_code == 403
    assert "token" not in response.json()
    victim.token.refresh_from_db()
    assert victim.token.is_active  # nothing rotated, nothing revoked


def test_even_staff_holding_every_scope_cannot_rotate_someone_elses_token(client, users):
    boss = User.objects.create_superuser("boss", password="x")
    theirs = token_create(name="mine", scopes=["approve"], owner=users["approver"])
    client.force_login(boss)
    assert client.post(f"/api/v1/tokens/{theirs.token.pk}/rotate/").status_code == 403
    # …but may revoke it (they hold every scope of it).
    assert client.post(f"/api/v1/tokens/{theirs.token.pk}/revoke/").status_code == 200


def test_two_tokens_of_one_person_are_one_approver(plan_factory, users, approvers):
    plan = awaiting(plan_factory, users, required_approvals=2)
    first = token_create(name="a", scopes=["approve"], owner=approvers[0]).plaintext
    second = token_create(name="b", scopes=["approve"], owner=approvers[0]).plaintext
    assert command(bearer(first), plan, "approve", revision=rev(plan)).status_code == 200
    again = command(bearer(second), plan, "approve", revision=rev(plan))
    assert again.status_code == 409 and "already" in again.json()["detail"]
    plan.refresh_from_db()
    assert plan.state == PlanState.AWAITING_APPROVAL


def test_a_token_acting_for_nobody_cannot_approve(plan_factory, users):
    plan = awaiting(plan_factory, users)
    orphan = token_create(name="orphan", scopes=["approve"]).plaintext
    assert command(bearer(orphan), plan, "approve", revision=rev(plan)).status_code == 403
    assert AuditEntry.objects.filter(action="approve_denied").exists()


def test_a_requester_cannot_approve_their_own_promotion_through_a_token(plan_factory, users):
    boss = User.objects.create_superuser("boss", password="x")
    plan = plan_factory()
    plan_start(plan_id=plan.pk, actor=Actor(boss))
    plan_promote(plan_id=plan.pk, actor=Actor(boss))
    own = token_create(name="boss-ci", scopes=["approve"], owner=boss).plaintext
    response = command(bearer(own), plan, "approve", revision=rev(plan))
    assert response.status_code == 403 and "four-eyes" in response.json()["detail"]
    assert not Approval.objects.exists()


def test_an_approver_whose_permission_was_withdrawn_cannot_approve_with_their_token(
    plan_factory, users
):
    plan = awaiting(plan_factory, users)
    secret = token_create(name="x", scopes=["approve"], owner=users["approver"]).plaintext
    users["approver"].groups.clear()
    assert command(bearer(secret), plan, "approve", revision=rev(plan)).status_code == 403


def test_one_approver_cannot_walk_a_plan_to_the_end_with_force_promote(plan_factory, users):
    plan = awaiting(plan_factory, users, required_approvals=2)
    client = APIClient()
    client.force_login(users["approver"])
    # An approver has no break-glass permission at all.
    response = command(client, plan, "force-promote", reason="urgent", revision=rev(plan))
    assert response.status_code == 403
    assert AuditEntry.objects.filter(action="force_promote_denied").exists()
    # With it, one person's vote does not force anything; a second person's does, one step.
    breakglass = roles_ensure()[ROLE_APPROVER]
    from django.contrib.auth.models import Permission

    permission = Permission.objects.get(codename="force_promote_migrations")
    people = []
    for name in ("bg1", "bg2"):
        person = User.objects.create_user(name, password="x", is_staff=True)
        person.groups.add(breakglass)
        person.user_permissions.add(permission)
        people.append(person)
    before = (plan.current_phase, plan.gray_step_index)
    client.force_login(people[0])
    assert command(client, plan, "force-promote", reason="r", revision=rev(plan)).status_code == 200
    again = command(client, plan, "force-promote", reason="r", revision=rev(plan))
    assert again.status_code == 409
    plan.refresh_from_db()
    assert (plan.current_phase, plan.gray_step_index) == before
    client.force_login(people[1])
    assert command(client, plan, "force-promote", reason="r", revision=rev(plan)).status_code == 200
    plan.refresh_from_db()
    assert plan.current_phase == "gray" and plan.gray_step_index == 0  # exactly one step
    forced = AuditEntry.objects.get(action="force_promote")
    assert "break-glass (2/2)" in forced.reason


def test_the_page_approves_the_gate_revision_it_showed_not_a_later_one(
    client, plan_factory, users, approvers
):
    plan = awaiting(plan_factory, users, required_approvals=2)
    seen = rev(plan)
    criterion_save(
        criterion=Criterion(
            phase=plan.phases.get(kind="pilot"),
            name="late-edit",
            metric=METRIC,
            entity_key="acme-chat",
            aggregation="p99",
            comparator="le",
            threshold=1,
        ),
        actor=Actor(users["operator"]),
    )
    client.force_login(approvers[0])
    client.post(
        f"/migrations/{plan.pk}/approve/",
        {"version": plan.version, "revision": seen, "comment": "ok"},
    )
    assert not Approval.objects.exists()  # the approval of revision 1 is not stored at 2


def test_an_api_approval_without_a_revision_is_refused(client_as, plan_factory, users):
    plan = awaiting(plan_factory, users)
    response = command(client_as("approver"), plan, "approve")
    assert response.status_code == 400 and "revision" in response.json()["errors"]


def test_deleting_a_criterion_in_the_admin_bumps_the_revision_and_is_audited(
    client, plan_factory, users
):
    plan = plan_factory(criteria={"pilot": [{"name": "a"}, {"name": "b", "threshold": 2}]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    before = rev(plan)
    criterion = Criterion.objects.get(phase__plan=plan, name="b")
    client.force_login(users["operator"])
    users["operator"].is_staff = True
    users["operator"].save()
    boss = User.objects.create_superuser("boss", password="x")
    client.force_login(boss)
    client.post(f"/admin/rollout/criterion/{criterion.pk}/delete/", {"post": "yes"})
    assert not Criterion.objects.filter(pk=criterion.pk).exists()
    assert rev(plan) == before + 1
    assert AuditEntry.objects.filter(action="criterion_delete", plan=plan).count() == 1


def test_a_gate_with_no_criteria_cannot_be_started(client_as, clusters, workloads, tenants, users):
    from rollout.services.plans import plan_create

    plan = plan_create(
        tenant=tenants["acme"],
        name="empty",
        source_cluster=clusters["legacy"],
        target_cluster=clusters["unified"],
        workloads={"pilot": [workloads["legacy:acme-batch"]]},
        actor=Actor(users["operator"]),
    )
    response = command(client_as("operator"), plan, "start")
    assert response.status_code == 409 and "manual gate" in response.json()["detail"]
    plan.refresh_from_db()
    assert plan.state == PlanState.DRAFT


def test_a_read_tokens_attempt_to_approve_is_audited(plan_factory, users):
    plan = awaiting(plan_factory, users)
    reader = token_create(name="r", scopes=["read"]).plaintext
    assert command(bearer(reader), plan, "approve", revision=rev(plan)).status_code == 403
    assert AuditEntry.objects.filter(action="approve_denied", plan=plan).count() == 1


def test_approve_then_reject_leaves_the_rejection_on_the_approval(plan_factory, users, approvers):
    plan = awaiting(plan_factory, users, required_approvals=2)
    client = APIClient()
    client.force_login(approvers[0])
    assert command(client, plan, "approve", revision=rev(plan)).status_code == 200
    response = command(client, plan, "reject", reason="second thoughts", revision=rev(plan))
    assert response.status_code == 200
    approval = Approval.objects.get(user=approvers[0])
    assert (approval.decision, approval.comment) == ("reject", "second thoughts")


def test_customers_see_roles_not_staff_usernames_or_addresses(client_as, plan_factory, users):
    plan = awaiting(plan_factory, users)
    customer = client_as("customer")
    audit = customer.get(f"/api/v1/plans/{plan.pk}/audit/").json()["results"]
    labels = {row["actor_label"] for row in audit}
    assert users["operator"].username not in labels and "operator" in labels
    assert all(row["source_ip"] is None for row in audit)
    gates = customer.get(f"/api/v1/plans/{plan.pk}/gates/").json()["results"]
    assert [g["requested_by"] for g in gates] == ["operator"]  # the role; the user is "op"
    page = customer.get(f"/migrations/{plan.pk}/").content.decode()
    assert f">{users['operator'].username}<" not in page and "127.0.0.1" not in page
