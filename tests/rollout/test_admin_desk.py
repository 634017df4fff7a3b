"""The approvals desk in the Django admin: a gate's page shows what is being approved and
decides through the same service as the pages and the API, bound to the revision seen."""

from __future__ import annotations

import pytest
from django.urls import reverse

from rollout.models import Approval, AuditEntry, Criterion, GateState, PhaseKind
from rollout.services.audit import Actor
from rollout.services.criteria import criterion_save
from rollout.services.transitions import plan_promote, plan_start

pytestmark = pytest.mark.django_db


@pytest.fixture
def awaiting(plan_factory, users):
    """A plan whose pilot gate (one pilot criterion) awaits approval, requested by the operator."""
    plan = plan_factory(criteria={PhaseKind.GRAY: [{}]}, required_approvals=1)
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    gate = plan.current_gate
    assert gate.state == GateState.AWAITING_APPROVAL
    return plan, gate


def _decide(client, gate, command: str, **fields):
    data = {
        "command": command,
        "revision": gate.revision,
        "expected_version": gate.plan.version,
        "reason": "looks good",
        **fields,
    }
    return client.post(reverse("admin:rollout_gate_decide", args=[gate.pk]), data, follow=True)


def test_the_gate_page_shows_the_revision_and_an_approve_reject_form(awaiting, client_as):
    _plan, gate = awaiting
    page = client_as("approver").get(reverse("admin:rollout_gate_change", args=[gate.pk]))
    body = page.content.decode()
    assert page.status_code == 200
    assert f'name="revision" value="{gate.revision}"' in body
    assert 'value="approve"' in body and 'value="reject"' in body
    assert "audit trail" in body.lower()


def test_an_approver_approves_the_revision_seen_through_the_one_service(awaiting, client_as):
    plan, gate = awaiting
    response = _decide(client_as("approver"), gate, "approve")
    assert response.status_code == 200
    approval = Approval.objects.get(gate=gate)
    assert approval.decision == Approval.Decision.APPROVE and approval.revision == gate.revision
    assert AuditEntry.objects.filter(plan=plan, action="approve").exists()
    plan.refresh_from_db()
    assert plan.current_phase == PhaseKind.GRAY  # one approval of one: the plan moved on


def test_an_approval_of_a_revision_that_changed_since_is_refused(awaiting, client_as, users):
    plan, gate = awaiting
    seen = gate.revision
    criterion_save(
        criterion=Criterion(
            phase=gate.phase,
            name="added-later",
            metric="inference_latency_p99_seconds",
            entity_key="acme-batch",
            aggregation="p99",
            comparator="le",
            threshold=2.0,
        ),
        actor=Actor(users["operator"]),
    )
    gate.refresh_from_db()
    assert gate.revision > seen
    response = _decide(client_as("approver"), gate, "approve", revision=seen)
    assert "revision" in response.content.decode().lower()
    assert not Approval.objects.filter(gate=gate).exists()


def test_the_requester_cannot_approve_their_own_promotion_at_the_desk(awaiting, client_as):
    _plan, gate = awaiting
    _decide(client_as("operator"), gate, "approve")
    assert not Approval.objects.filter(gate=gate, decision=Approval.Decision.APPROVE).exists()


def test_a_rejection_needs_a_reason_and_is_recorded_on_the_approval(awaiting, client_as):
    _plan, gate = awaiting
    _decide(client_as("approver"), gate, "reject", reason="")
    assert not Approval.objects.filter(gate=gate).exists()
    _decide(client_as("approver"), gate, "reject", reason="p99 too close to the SLO")
    rejection = Approval.objects.get(gate=gate)
    assert rejection.decision == Approval.Decision.REJECT
    assert rejection.comment == "p99 too close to the SLO"


def test_awaiting_my_approval_lists_only_gates_i_may_still_decide(awaiting, client_as):
    _plan, gate = awaiting
    url = reverse("admin:rollout_gate_changelist") + "?mine=yes"
    approver = client_as("approver")
    assert approver.get(url).context["cl"].result_count == 1
    _decide(approver, gate, "reject", reason="not yet")
    assert approver.get(url).context["cl"].result_count == 0
    assert client_as("operator").get(url).context["cl"].result_count == 0  # requested it


def test_customers_cannot_open_the_desk_or_decide(awaiting, client_as):
    _plan, gate = awaiting
    customer = client_as("customer")
    page = customer.get(reverse("admin:rollout_gate_change", args=[gate.pk]))
    assert page.status_code in (302, 403)
    _decide(customer, gate, "approve")
    assert not Approval.objects.filter(gate=gate).exists()
