"""Choosing a plan's traffic router (or one workload's): the one path for page, API and admin."""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext_noop

from rollout.labels import reason_data
from rollout.models import MigrationPlan, PlanState, TrafficRouter
from rollout.services.audit import Actor, audit_record
from rollout.services.errors import NotPermitted, WorkflowConflict
from rollout.services.plans import plan_lock
from rollout.services.traffic import require_routable

# While a step's traffic is being analysed the router must not change under it.
CHOOSABLE_IN = (PlanState.DRAFT, PlanState.PAUSED, PlanState.ROLLED_BACK)


def router_choose(
    *,
    plan_id: int,
    router: TrafficRouter | None,
    actor: Actor,
    workload_id: int | None = None,
    expected_version: int | None = None,
) -> MigrationPlan:
    """Set the plan's router (``workload_id``: that plan workload's own; ``None`` router: the
    twin, or for a workload, the plan's). Audited; the next step pushes to the new router."""
    if not actor.can_operate():
        raise NotPermitted(gettext_noop("choosing a traffic router needs the operate permission"))
    with transaction.atomic():
        plan = plan_lock(plan_id, expected_version=expected_version)
        if plan.state not in CHOOSABLE_IN:
            raise WorkflowConflict(
                gettext_noop("choose the router while the plan is a draft, paused or rolled back")
            )
        if workload_id is None:
            before = plan.router
            plan.router = router
            plan.version += 1
            plan.save(update_fields=["router", "version"])
            items = list(plan.workloads.filter(router__isnull=True))
            what = "plan"
        else:
            item = plan.workloads.select_related("workload").filter(pk=workload_id).first()
            if item is None:
                raise WorkflowConflict(
                    gettext_noop("workload %(id)s is not part of this plan"), id=workload_id
                )
            before = item.router
            item.router = router
            item.save(update_fields=["router"])
            plan.version += 1
            plan.save(update_fields=["version"])
            items, what = [item], item.workload.name
        for item in items:  # nothing is confirmed on a router that was never asked
            item.confirmed_share = item.confirmed_at = None
            item.save(update_fields=["confirmed_share", "confirmed_at"])
        require_routable(plan)
        old, new = (r.name if r else "twin" for r in (before, router))
        audit_record(
            actor=actor,
            action="router_choose",
            plan=plan,
            reason=f"{what}: router {old} → {new}",
            reason_data=reason_data("router_chosen", what=what, old=old, new=new),
        )
    return plan
