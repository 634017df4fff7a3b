"""Refusals of principals without any workflow role: one audit row per plan, command and
hour, the rest counted; people holding a role are audited every time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.services.tokens import token_create
from rollout.models import AuditEntry, DeniedAttemptCount
from rollout.services.audit import Actor
from rollout.services.errors import NotPermitted
from rollout.services.transitions import gate_approve, plan_start

pytestmark = pytest.mark.django_db


def refuse(plan, actor: Actor, times: int = 1) -> None:
    for _ in range(times):
        with pytest.raises(NotPermitted):
            gate_approve(plan_id=plan.pk, actor=actor, revision=1)


def test_a_customers_refusals_are_counted_after_the_first_audit_row(plan_factory, users):
    plan = plan_factory()
    refuse(plan, Actor(users["customer"]), times=5)
    assert AuditEntry.objects.filter(action="approve_denied").count() == 1
    row = DeniedAttemptCount.objects.get()
    assert (row.action, row.principal, row.count) == ("approve", users["customer"].username, 5)


def test_a_new_hour_audits_again(plan_factory, users, monkeypatch):
    plan = plan_factory()
    refuse(plan, Actor(users["customer"]), times=2)
    later = timezone.now() + timedelta(hours=1)
    monkeypatch.setattr("rollout.services.guards.timezone.now", lambda: later)
    refuse(plan, Actor(users["customer"]), times=2)
    assert AuditEntry.objects.filter(action="approve_denied").count() == 2
    assert sorted(DeniedAttemptCount.objects.values_list("count", flat=True)) == [2, 2]


def test_a_read_token_holds_no_workflow_role(plan_factory, users):
    from accounts.api.authentication import IntegrationPrincipal

    plan = plan_factory()
    token = token_create(name="r", scopes=["read"], owner=users["approver"]).token
    actor = Actor(IntegrationPrincipal(token))
    assert actor.holds_no_workflow_role()
    refuse(plan, actor, times=3)
    assert AuditEntry.objects.filter(action="approve_denied").count() == 1


def test_an_operator_refused_an_approval_is_audited_every_time(plan_factory, users):
    plan = plan_factory()
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    refuse(plan, Actor(users["operator"]), times=3)
    assert AuditEntry.objects.filter(action="approve_denied").count() == 3
    assert not DeniedAttemptCount.objects.exists()
