"""Moving a plan's traffic through its routers, confirmed by read-back, every call audited.

The transitions set each workload's desired ``share`` (``traffic_apply``/``traffic_rollback``
in :mod:`rollout.services.plans`), then call :func:`traffic_route`: for each workload whose
router is real (HAProxy, a deploy tool's webhook) an ``intended`` ``RouterCall`` is
committed with the transition; :mod:`rollout.services.router_dispatch` sends it after the
commit (:func:`router_send`) and stores what the router **reads back** as
``confirmed_share``. The step's analysis clock starts at that confirmation, never at the
portal's commit; the twin keeps today's rule (its shares take effect at commit). A router
that refuses, times out, is unreachable, answers garbage, names an unknown backend/server or
confirms another share pauses the plan with that reason code
(``rollout.models.RouterOutcome``) and never promotes. Each answer is recorded on its
``RouterCall`` row and in one audit row (who, which share, what the router answered). The
contracts: ``docs/traffic-routers.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q
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
    """What committing a plan's shares came to: ``pending`` when real routers were given
    intents (sent after the commit), else the confirmation that still holds."""

    confirmed_at: datetime | None = None
    pending: bool = False
    real: bool = False
    calls: list[RouterCall] = field(default_factory=list)

    def clock(self) -> dict:
        """``analysis_start``'s traffic arguments: when the step's traffic took effect."""
        if self.pending:
            return {"traffic_pending": True}
        if self.real and self.confirmed_at is not None:
            return {"traffic_at": self.confirmed_at}
        return {}  # twin only: at the commit


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


def traffic_route(
    plan: MigrationPlan, *, actor: Actor, operation: str = "set", force: bool = False
) -> RouteResult:
    """Commit each workload's ``share`` as an intent for its router (caller's transaction).

    No router is called here: a slow router must not hold the plan's row locks, and a
    rollback must not leave a router that moved traffic disagreeing with the portal. Each real
    router gets an ``intended`` :class:`RouterCall`; after the commit
    :func:`rollout.services.router_dispatch.router_intents_dispatch` sends it and commits what
    the router read back. ``operation="set"`` asks a real router only where the share asked
    differs from the one it last confirmed (or is already intended); ``"restore"`` (abort,
    rollback) asks every real router again, so a rollback is always verified; so does
    ``force`` (``retry``: a router that lost the share — a restart — is pushed and read back,
    never measured again on what the portal last believed). The twin's shares take effect
    here, at the commit.
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
        asked = round(item.share * 100, 4)
        if (
            operation == "set"
            and not force
            and (
                (
                    item.confirmed_share is not None
                    and abs(item.confirmed_share - item.share) * 100 < SHARE_TOLERANCE
                )
                or RouterCall.objects.filter(
                    plan_workload=item,
                    operation=operation,
                    outcome=RouterOutcome.INTENDED,
                    desired_share=asked,
                ).exists()
            )
        ):
            continue
        result.calls.append(router_intent(plan, item, config, actor=actor, operation=operation))
        result.pending = True
    if result.real and result.confirmed_at is None and not result.pending:
        result.confirmed_at = now  # nothing changed: what was confirmed before still holds
    return result


def router_intent(
    plan: MigrationPlan, item: PlanWorkload, config: TrafficRouter, *, actor: Actor, operation: str
) -> RouterCall:
    """One call to one router for one workload, committed before it is sent (``intended``).

    It replaces, explicitly and audited, the workload's earlier calls still unanswered — one
    awaiting a callback, one not sent yet — so a late confirmation of those changes nothing (a
    restore never waits behind a set, nor loses to it). One being sent right now is answered
    first (the dispatcher sends a plan's calls in order) and superseded when that answer
    commits."""
    earlier = RouterCall.objects.select_for_update().filter(
        Q(outcome=RouterOutcome.PENDING) | Q(outcome=RouterOutcome.INTENDED, attempts=0),
        plan_workload=item,
    )
    earlier = list(earlier)
    call = RouterCall.objects.create(
        plan=plan,
        plan_workload=item,
        router=config,
        router_label=config.name,
        operation=operation,
        step=step_label(plan),
        desired_share=round(item.share * 100, 4),
        outcome=RouterOutcome.INTENDED,
        idempotency_key=f"plan-{plan.pk}-v{plan.version}-w{item.pk}-{operation}",
        actor_label=actor.label,
    )
    for old in earlier:
        router_call_supersede(old, by=call, actor=actor)
    return call


def router_call_supersede(
    call: RouterCall, *, by: RouterCall, actor: Actor, said: str = "", share=None
) -> None:
    """Mark ``call`` replaced by the later ``by`` (caller holds the plan lock), audited."""
    what = f"superseded by {by.operation} {by.desired_share:g}% (call {by.pk})"
    call.outcome, call.claimed_until = RouterOutcome.SUPERSEDED, None
    call.confirmed_share, call.confirmed_at = share, None
    call.answer = (f"{what}; the router said {said}" if said else what)[:500]
    fields = ["outcome", "claimed_until", "confirmed_share", "confirmed_at", "answer"]
    call.save(update_fields=fields)
    router_call_audit(call, actor=actor, action="router_superseded")


def router_send(call: RouterCall, config: TrafficRouter) -> tuple[str, str, float | None]:
    """Ask the router for ``call``'s share and read it back: ``(outcome, answer, read-back)``.

    Touches no database row (the dispatcher calls it outside any transaction)."""
    plan = call.plan
    desired = Desired(
        plan_id=plan.pk,
        plan=plan.name,
        step=call.step,
        workload=call.plan_workload.workload.name,
        source=plan.source_cluster.name,
        target=plan.target_cluster.name,
        share=call.desired_share,
        idempotency_key=call.idempotency_key,
        operation=call.operation,
    )
    client = router_client(config)
    try:
        if call.operation == "restore":
            answer = client.restore(desired)
        else:
            answer = client.set_share(desired)
    except RouterError as exc:
        return exc.code, exc.detail, None
    asked, text, confirmed = call.desired_share, answer.answer, answer.share
    if answer.pending:
        return RouterOutcome.PENDING, text, confirmed
    if confirmed is not None and abs(confirmed - asked) < SHARE_TOLERANCE:
        return RouterOutcome.CONFIRMED, text, confirmed
    shown = "—" if confirmed is None else f"{confirmed:g}"
    return RouterOutcome.MISMATCH, f"asked {asked:g}%, read back {shown}%; {text}", confirmed


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
    """Calls not answered yet: intended (not sent or in flight) or awaiting a callback."""
    calls = RouterCall.objects.filter(
        plan=plan, outcome__in=(RouterOutcome.INTENDED, RouterOutcome.PENDING)
    )
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
    """Restore the shares and move to ``to`` when nothing is left to confirm (the twin), else
    to ``rollback_unconfirmed`` (``resume_state`` keeps ``to``) until the dispatcher commits
    every router's read-back of the source back: then the plan reaches ``to``; a router that
    does not confirm leaves it unconfirmed and alerts (``rollback_unconfirmed``)."""
    routed = traffic_route(plan, actor=actor, operation="restore")
    verified = not routed.pending
    plan.resume_state = "" if verified else to
    plan_move(
        plan,
        to=to if verified else PlanState.ROLLBACK_UNCONFIRMED,
        action=action,
        actor=actor,
        reason=reason,
        reason_data=reason_data,
        events=events,
        obj=obj,
    )
    return verified
