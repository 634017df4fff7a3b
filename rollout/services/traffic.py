"""Moving a plan's traffic through its routers, confirmed by read-back, every call audited.

The transitions set each workload's desired ``share`` (``traffic_apply``/``traffic_rollback``
in :mod:`rollout.services.plans`), then call :func:`traffic_route`: for each workload whose
router is real (HAProxy, a deploy tool's webhook) the router is asked for the share and what
it **reads back** is stored as ``confirmed_share``. The step's analysis clock starts at that
confirmation (``RouteResult.clock``), never at the portal's commit; the twin keeps today's
rule (its shares take effect at commit). A router that refuses, times out, is unreachable,
answers garbage, names an unknown backend/server or confirms another share stops the
routing: the caller pauses the plan with that reason code (``rollout.models.RouterOutcome``)
and never promotes. Each real call is one ``RouterCall`` row and one audit row (who, which
share, what the router answered). The contracts: ``docs/traffic-routers.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone
from django.utils.translation import gettext_noop

from rollout.labels import reason_data
from rollout.models import (
    MigrationPlan,
    PhaseKind,
    PlanState,
    PlanWorkload,
    RouterCall,
    RouterKind,
    RouterOutcome,
    TrafficRouter,
)
from rollout.routers import Desired, RouterError, router_client
from rollout.services.audit import Actor, audit_record
from rollout.services.errors import WorkflowConflict
from rollout.services.plans import plan_move

# A read-back within half a point of the share asked is the share asked (weights are whole).
SHARE_TOLERANCE = 0.5


@dataclass
class RouteResult:
    """What routing a plan's shares came to."""

    confirmed_at: datetime | None = None
    pending: bool = False
    real: bool = False
    failure: RouterCall | None = None
    calls: list[RouterCall] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def clock(self) -> dict:
        """``analysis_start``'s traffic arguments: when the step's traffic took effect."""
        if self.pending:
            return {"traffic_pending": True}
        if self.real and self.confirmed_at is not None:
            return {"traffic_at": self.confirmed_at}
        return {}  # twin only: at the commit

    def reason(self) -> tuple[str, dict]:
        """The failure as English text and as a code (the pause's audit reason)."""
        return call_reason(self.failure)


def call_reason(call: RouterCall) -> tuple[str, dict]:
    outcome = RouterOutcome(call.outcome)
    text = (
        f"router {call.router_label}: {outcome.value} setting {call.plan_workload.workload.name} "
        f"to {call.desired_share:g}%: {call.answer}"
    )
    data = reason_data(
        "router_failed",
        router=call.router_label,
        outcome=outcome.value,
        workload=call.plan_workload.workload.name,
        share=f"{call.desired_share:g}",
        answer=call.answer,
    )
    return text[:500], data


def router_of(item: PlanWorkload, plan: MigrationPlan) -> TrafficRouter | None:
    """The workload's own router, else the plan's, else ``None`` (the twin)."""
    return item.router if item.router_id else plan.router


def router_conflicts(plan: MigrationPlan) -> list[str]:
    """HAProxy routers moved by two workloads of the plan (one backend pair cannot carry two
    shares); a webhook tool may serve several (the workload is in the desired state)."""
    seen: dict[int, str] = {}
    clashes = []
    for item in plan.workloads.select_related("router", "workload"):
        router = router_of(item, plan)
        if router is None or router.kind != RouterKind.HAPROXY:
            continue
        if router.pk in seen:
            clashes.append(f"{router.name}: {seen[router.pk]}, {item.workload.name}")
        seen.setdefault(router.pk, item.workload.name)
    return clashes


def require_routable(plan: MigrationPlan) -> None:
    clashes = router_conflicts(plan)
    if clashes:
        raise WorkflowConflict(
            gettext_noop(
                "one HAProxy router cannot move two workloads (give each its own backend): "
                "%(clashes)s"
            ),
            clashes="; ".join(clashes),
        )


def step_label(plan: MigrationPlan) -> str:
    if plan.current_phase == PhaseKind.GRAY:
        return f"gray {plan.gray_steps[plan.gray_step_index]}%"
    return plan.current_phase or "draft"


def traffic_route(plan: MigrationPlan, *, actor: Actor, operation: str = "set") -> RouteResult:
    """Push each workload's ``share`` to its router and read it back (caller's transaction).

    ``operation="set"`` calls a real router only where the share asked differs from the one
    it last confirmed; ``"restore"`` (abort, rollback) calls every real router again, so a
    rollback is always verified. Stops at the first failure.
    """
    result = RouteResult()
    now = timezone.now()
    items = plan.workloads.select_related("workload", "router").order_by("pk")
    for item in items:
        config = router_of(item, plan)
        if config is None or config.kind == RouterKind.TWIN:
            if item.confirmed_share != item.share:
                item.confirmed_share, item.confirmed_at = item.share, now
                item.save(update_fields=["confirmed_share", "confirmed_at"])
            continue
        result.real = True
        if (
            operation == "set"
            and item.confirmed_share is not None
            and abs(item.confirmed_share - item.share) * 100 < SHARE_TOLERANCE
        ):
            continue
        call = router_call(plan, item, config, actor=actor, operation=operation)
        result.calls.append(call)
        if call.outcome == RouterOutcome.PENDING:
            result.pending = True
        elif call.outcome == RouterOutcome.CONFIRMED:
            result.confirmed_at = max(filter(None, (result.confirmed_at, call.confirmed_at)))
        else:
            result.failure = call
            return result
    if result.real and result.confirmed_at is None and not result.pending:
        result.confirmed_at = now  # nothing changed: what was confirmed before still holds
    return result


def router_call(
    plan: MigrationPlan, item: PlanWorkload, config: TrafficRouter, *, actor: Actor, operation: str
) -> RouterCall:
    """One call to one router for one workload: asked, read back, logged and audited."""
    asked = round(item.share * 100, 4)
    key = f"plan-{plan.pk}-v{plan.version}-w{item.pk}-{operation}"
    desired = Desired(
        plan_id=plan.pk,
        plan=plan.name,
        step=step_label(plan),
        workload=item.workload.name,
        source=plan.source_cluster.name,
        target=plan.target_cluster.name,
        share=asked,
        idempotency_key=key,
        operation=operation,
    )
    client = router_client(config)
    confirmed: float | None = None
    try:
        answer = client.restore(desired) if operation == "restore" else client.set_share(desired)
    except RouterError as exc:
        outcome, text = exc.code, exc.detail
    else:
        text, confirmed = answer.answer, answer.share
        if answer.pending:
            outcome = RouterOutcome.PENDING
        elif confirmed is not None and abs(confirmed - asked) < SHARE_TOLERANCE:
            outcome = RouterOutcome.CONFIRMED
        else:
            outcome = RouterOutcome.MISMATCH
            text = f"asked {asked:g}%, read back {confirmed:g}%; {text}"
    at = timezone.now()
    call = RouterCall.objects.create(
        plan=plan,
        plan_workload=item,
        router=config,
        router_label=config.name,
        operation=operation,
        step=desired.step,
        desired_share=asked,
        confirmed_share=confirmed,
        outcome=outcome,
        answer=text[:500],
        idempotency_key=key,
        actor_label=actor.label,
        confirmed_at=at if outcome == RouterOutcome.CONFIRMED else None,
    )
    router_call_audit(call, actor=actor)
    confirmation_store(item, call)
    return call


def router_call_audit(call: RouterCall, *, actor: Actor, action: str = "") -> None:
    shown = "" if call.confirmed_share is None else f"{call.confirmed_share:g}"
    audit_record(
        actor=actor,
        action=action or f"router_{call.operation}",
        plan=call.plan,
        obj=call,
        reason=(
            f"{call.router_label}: {call.plan_workload.workload.name} {call.desired_share:g}% "
            f"asked, {shown or '—'}% confirmed ({call.outcome}): {call.answer}"
        )[:1000],
        reason_data=reason_data(
            "router_call",
            router=call.router_label,
            workload=call.plan_workload.workload.name,
            asked=f"{call.desired_share:g}",
            confirmed=shown or "—",
            outcome=call.outcome,
            answer=call.answer,
        ),
    )


def confirmation_store(item: PlanWorkload, call: RouterCall) -> None:
    """The workload's confirmed share after ``call``: the read-back, or unknown."""
    if call.outcome == RouterOutcome.CONFIRMED:
        item.confirmed_share, item.confirmed_at = call.confirmed_share / 100, call.confirmed_at
    elif call.outcome == RouterOutcome.MISMATCH and call.confirmed_share is not None:
        item.confirmed_share, item.confirmed_at = call.confirmed_share / 100, call.at
    else:
        item.confirmed_share, item.confirmed_at = None, None
    item.save(update_fields=["confirmed_share", "confirmed_at"])


def pending_calls(plan: MigrationPlan, *, operation: str | None = None):
    calls = RouterCall.objects.filter(plan=plan, outcome=RouterOutcome.PENDING)
    return calls.filter(operation=operation) if operation else calls


def restore_verified(
    plan: MigrationPlan,
    *,
    to: str,
    action: str,
    actor: Actor,
    reason: str = "",
    reason_data: dict | None = None,
    events: tuple[str, ...] = (),
    obj=None,
) -> bool:
    """Push the restored shares and move to ``to`` when every router confirmed them, else to
    ``rollback_unconfirmed`` (``resume_state`` keeps ``to`` for the verification)."""
    routed = traffic_route(plan, actor=actor, operation="restore")
    verified = routed.ok and not routed.pending
    plan.resume_state = "" if verified else to
    if not verified and routed.failure is not None and not reason_data:
        reason = f"{reason}; {routed.reason()[0]}" if reason else routed.reason()[0]
    plan_move(
        plan,
        to=to if verified else PlanState.ROLLBACK_UNCONFIRMED,
        action=action,
        actor=actor,
        reason=reason,
        reason_data=reason_data,
        events=events + (() if verified else ("rollback_unconfirmed",)),
        obj=obj,
    )
    return verified
