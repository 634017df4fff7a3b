"""Approval screens show only what the viewer may do, in words (issue 24, part 10).

The bugs replayed: the requester was offered Approve and Break-glass and then refused; an
approver who had approved still saw Approve; the admin's gate page showed "Gray step: 0" (an
index) and said "approved" after the first of two approvals; audit rows read
``criterion_change`` and "gate 11 now at revision 4", in zh-hans too.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import translation

from accounts.services.roles import ROLE_APPROVER, ROLE_OPERATOR, roles_ensure
from rollout.models import AuditEntry, Criterion, GateState, PhaseKind
from rollout.services.audit import Actor
from rollout.services.criteria import criterion_save
from rollout.services.transitions import gate_approve, plan_promote, plan_start
from tests.rollout.conftest import rev


@pytest.fixture
def lead(users):
    """Someone who operates, approves and holds break-glass: the requester of the promotion."""
    from accounts.models import User

    groups = roles_ensure()
    user = User.objects.create_user(username="lead", password="x", is_staff=True)
    user.groups.add(groups[ROLE_APPROVER], groups[ROLE_OPERATOR])
    user.user_permissions.add(
        Permission.objects.get(
            codename="force_promote_migrations", content_type__app_label="monitoring"
        )
    )
    return user


@pytest.fixture
def gray_awaiting(plan_factory, users, approvers, lead):
    """A plan at gray 5 % awaiting two approvals, its promotion requested by ``lead``."""
    plan = plan_factory(required_approvals=2)
    plan_start(plan_id=plan.pk, actor=Actor(lead))
    plan_promote(plan_id=plan.pk, actor=Actor(lead))
    for approver in approvers[:2]:
        gate_approve(plan_id=plan.pk, actor=Actor(approver), revision=rev(plan))
    plan.refresh_from_db()
    assert (plan.current_phase, plan.current_step_percent) == ("gray", 5)
    plan_promote(plan_id=plan.pk, actor=Actor(lead))
    plan.refresh_from_db()
    assert plan.current_gate.state == GateState.AWAITING_APPROVAL
    return plan


def _buttons(page: str) -> set[str]:
    return set(re.findall(r"formaction=\"/migrations/\d+/([a-z-]+)/\"", page))


def test_the_requester_is_offered_neither_approve_nor_break_glass(client, gray_awaiting, lead):
    client.force_login(lead)
    page = client.get(f"/migrations/{gray_awaiting.pk}/").content.decode()
    assert "approve" not in _buttons(page) and "force-promote" not in _buttons(page)
    assert "reject" in _buttons(page)  # withdrawing one's own request is allowed
    assert "four-eyes" in page


def test_an_approver_who_approved_sees_no_approve_and_reads_1_of_2(
    client, gray_awaiting, approvers
):
    gate_approve(plan_id=gray_awaiting.pk, actor=Actor(approvers[0]), revision=rev(gray_awaiting))
    client.force_login(approvers[0])
    page = client.get(f"/migrations/{gray_awaiting.pk}/").content.decode()
    assert "approve" not in _buttons(page)
    assert "approved 1 of 2" in page
    client.force_login(approvers[1])  # someone who has not decided yet still may
    assert "approve" in _buttons(client.get(f"/migrations/{gray_awaiting.pk}/").content.decode())


def test_the_admin_gate_page_names_the_step_by_its_share_and_counts_approvals(
    client, gray_awaiting, approvers, lead
):
    gate = gray_awaiting.current_gate
    url = reverse("admin:rollout_gate_change", args=[gate.pk])
    client.force_login(approvers[0])
    page = client.get(url).content.decode()
    step = re.search(r'field-gray_step.*?<div class="readonly">(.*?)</div>', page, re.S)
    assert step and step.group(1).strip() == "5%"
    response = client.post(
        reverse("admin:rollout_gate_decide", args=[gate.pk]),
        {
            "command": "approve",
            "revision": gate.revision,
            "expected_version": gray_awaiting.version,
        },
        follow=True,
    )
    body = response.content.decode()
    assert "approved 1 of 2" in body
    assert 'value="approve"' not in body  # decided: no second Approve
    client.force_login(lead)
    assert 'value="approve"' not in client.get(url).content.decode()  # the requester


def test_audit_rows_of_criterion_edits_read_in_words_in_both_languages(
    plan_factory, users, gray_awaiting
):
    phase = gray_awaiting.phases.get(kind=PhaseKind.GRAY)
    criterion = Criterion(
        phase=phase,
        name="chat-latency",
        metric="inference_latency_p99_seconds",
        entity_key="acme-chat",
        aggregation="p99",
        comparator="le",
        threshold=1.0,
    )
    criterion_save(criterion=criterion, actor=Actor(users["operator"]))
    criterion.threshold = 0.8
    criterion_save(criterion=criterion, actor=Actor(users["operator"]))
    row = AuditEntry.objects.filter(action="criterion_change").get()
    gate = gray_awaiting.current_gate
    gate.refresh_from_db()
    assert row.action_display == "change criterion"
    assert f"gate {gate.pk}" not in row.reason_display
    assert (
        f"the gray 5% gate is now at revision {gate.revision}: earlier approvals no longer count"
        in row.reason_display
    )
    vote = AuditEntry.objects.filter(action="approve", to_state="awaiting_approval").first()
    assert vote.reason_display.startswith("approval 1 of 2")
    with translation.override("zh-hans"):
        assert row.action_display != "change criterion"
        assert "revision" not in row.reason_display and "gate" not in row.reason_display
        assert "approval" not in vote.reason_display
