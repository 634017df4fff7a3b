"""Sending committed router intents, outside any transaction, and committing their answers.

A transition never calls a router inside its own transaction (a slow router would hold the
plan's row locks; a rollback after the router moved traffic would leave the two disagreeing).
It commits ``intended`` :class:`RouterCall` rows (:func:`rollout.services.traffic.traffic_route`)
and then calls :func:`router_intents_dispatch`, which, one call at a time and oldest first:

1. claims the call in a short transaction (``attempts`` + 1, ``claimed_until``) — a claim
   still running makes other dispatchers of the plan wait, so a plan's routers are asked in
   the order the portal decided (a restore never overtakes the share it undoes);
2. asks the router and reads it back, holding no lock;
3. commits the answer in a second short transaction (:func:`router_call_settle`): the step's
   analysis clock starts at the read-back; a refusal, timeout or other share pauses the plan
   with that reason; a restore confirmed everywhere reaches the state its abort or rollback
   was heading to, one not confirmed alerts (``rollback_unconfirmed``). Every answer is
   audited.

A worker that dies between 1 and 3 leaves the call ``intended`` with a lapsed claim: the
analysis beat (:func:`router_intents_sweep`) sends it again — the share is absolute and the
idempotency key unchanged, so a repeat moves nothing twice — and after ``MAX_DISPATCHES``
attempts reports it as timed out (the step pauses, a restore stays unconfirmed).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from rollout.models import (
    GateState,
    MigrationPlan,
    PlanState,
    RouterCall,
    RouterOutcome,
    TrafficRouter,
)
from rollout.routers.webhook import BACKOFF_SECONDS
from rollout.services.analysis import (
    analysis_start,
    analysis_terminate,
    analysis_traffic_confirmed,
)
from rollout.services.audit import SYSTEM, Actor
from rollout.services.plans import plan_lock, plan_move
from rollout.services.router_watch import (
    reading_baseline,
    router_counters,
    split_pending,
)
from rollout.services.traffic import (
    call_reason,
    confirmation_store,
    pending_calls,
    router_call_audit,
    router_call_supersede,
    router_send,
)

# Sends of one intent before it is reported (each a lapsed claim: a worker lost mid-call).
MAX_DISPATCHES = 3
# How often a dispatcher waiting for another one's call looks again.
WAIT_POLL_SECONDS = 0.05

_BUSY = object()
_AGAIN = object()


def claim_seconds(config: TrafficRouter | None) -> float:
    """How long a claim holds: every attempt of the call at its deadline, the backoff between
    them, and a margin; past it the call is presumed lost and sent again."""
    if config is None:
        return 10.0
    attempts = max(1, config.max_attempts)
    backoff = sum(BACKOFF_SECONDS * 2**i for i in range(attempts - 1))
    return config.timeout_seconds * attempts + backoff + 10.0


def router_intents_dispatch(plan_id: int, *, actor: Actor = SYSTEM, wait: bool = True) -> int:
    """Send the plan's intended router calls (see the module docstring); the number sent.

    ``wait``: while another dispatcher's call is in flight, wait for it (bounded by its
    claim) so the caller sees the outcome of what it asked; else return at once (the other
    dispatcher sends what is left)."""
    sent = 0
    waited_until: float | None = None
    while True:
        claimed = _claim(plan_id, actor=actor)
        if claimed is _AGAIN:
            continue
        if claimed is _BUSY:
            if not wait:
                return sent
            now = time.monotonic()
            if waited_until is None:
                waited_until = now + _longest_claim(plan_id)
            if now > waited_until:
                return sent
            time.sleep(WAIT_POLL_SECONDS)
            continue
        if claimed is None:
            return sent
        call, config = claimed
        # Outside any transaction: the router may take its whole deadline.
        counters = None
        if config is None:
            outcome, text, share = RouterOutcome.UNREACHABLE, "the router was deleted", None
        else:
            outcome, text, share = router_send(call, config)
            if outcome == RouterOutcome.CONFIRMED:
                # Where the served split's window and the router's error count start.
                counters = router_counters(config)
        _commit(
            plan_id, call.pk, outcome=outcome, text=text, share=share, actor=actor,
            counters=counters,
        )  # fmt: skip
        sent += 1


def router_intents_sweep(*, now: datetime | None = None) -> int:
    """Send every plan's intents nobody is sending (a lost worker's, an automatic rollback's
    from the analysis beat); the number of calls sent."""
    now = now or timezone.now()
    plan_ids = (
        RouterCall.objects.filter(outcome=RouterOutcome.INTENDED)
        .values_list("plan_id", flat=True)
        .distinct()
    )
    return sum(router_intents_dispatch(pk, wait=False) for pk in list(plan_ids))


def _longest_claim(plan_id: int) -> float:
    routers = TrafficRouter.objects.filter(
        calls__plan_id=plan_id, calls__outcome=RouterOutcome.INTENDED
    ).distinct()
    return max((claim_seconds(r) for r in routers), default=10.0)


def _claim(plan_id: int, *, actor: Actor):
    with transaction.atomic():
        plan = plan_lock(plan_id)
        now = timezone.now()
        intents = list(
            RouterCall.objects.select_for_update()
            .filter(plan=plan, outcome=RouterOutcome.INTENDED)
            .order_by("id")
        )
        if not intents:
            return None
        if any(c.claimed_until is not None and c.claimed_until > now for c in intents):
            return _BUSY
        call = intents[0]
        if call.attempts >= MAX_DISPATCHES:
            text = (
                f"sent {call.attempts} times without an answer committed "
                "(the portal's worker stopped mid-call); check the router"
            )
            router_call_settle(
                plan, call, outcome=RouterOutcome.TIMEOUT, share=None, text=text, actor=actor
            )
            return _AGAIN
        config = TrafficRouter.objects.filter(pk=call.router_id).first()
        call.attempts += 1
        call.claimed_until = now + timedelta(seconds=claim_seconds(config))
        call.save(update_fields=["attempts", "claimed_until"])
    call = RouterCall.objects.select_related(
        "plan__source_cluster", "plan__target_cluster", "plan_workload__workload"
    ).get(pk=call.pk)
    return call, config


def _commit(
    plan_id: int, call_id: int, *, outcome: str, text: str, share, actor: Actor, counters=None
) -> None:
    at = timezone.now()
    with transaction.atomic():
        plan = plan_lock(plan_id)
        call = RouterCall.objects.select_for_update().get(pk=call_id)
        if call.outcome != RouterOutcome.INTENDED:
            return  # answered already (a lapsed claim sent again by another worker)
        router_call_settle(
            plan, call, outcome=outcome, share=share, text=text, actor=actor, at=at,
            counters=counters,
        )  # fmt: skip


def router_call_settle(
    plan: MigrationPlan,
    call: RouterCall,
    *,
    outcome: str,
    share: float | None,
    text: str,
    actor: Actor,
    at: datetime | None = None,
    action: str = "",
    counters: dict | None = None,
) -> None:
    """Commit a router's answer to ``call`` and move the plan by it (caller holds the plan
    lock): the dispatcher's answers, a deploy tool's callback, a callback that never came.

    **Calls are ordered**: the answer to a call that a later call of the same workload
    replaced (an abort's restore after a set, a retry's push) is recorded — outcome
    ``superseded``, the router's words kept, audited — and changes nothing."""
    at = at or timezone.now()
    later = (
        RouterCall.objects.filter(plan_workload_id=call.plan_workload_id, id__gt=call.pk)
        .order_by("id")
        .first()
    )
    if later is not None:
        router_call_supersede(call, by=later, actor=actor, said=f"{outcome}: {text}", share=share)
        return
    intended_at = call.at
    call.outcome, call.confirmed_share, call.answer = outcome, share, text[:500]
    call.confirmed_at = at if outcome == RouterOutcome.CONFIRMED else None
    call.claimed_until = None
    fields = ["outcome", "confirmed_share", "answer", "confirmed_at", "claimed_until"]
    if outcome == RouterOutcome.PENDING:
        call.at = at  # the callback window runs from the send
        fields.append("at")
    call.save(update_fields=fields)
    router_call_audit(call, actor=actor, action=action)
    gate = plan.current_gate
    if outcome == RouterOutcome.PENDING:
        if call.operation == "set" and gate is not None and gate.state == GateState.ANALYSING:
            if plan.state in (PlanState.RUNNING, PlanState.PAUSED):
                _step_clock(plan, gate, started=intended_at, at=None)
        return
    confirmation_store(call.plan_workload, call)
    still_pending = pending_calls(plan, operation=call.operation).exists()
    if call.operation == "restore":
        if plan.state != PlanState.ROLLBACK_UNCONFIRMED:
            return
        if outcome == RouterOutcome.CONFIRMED:
            if not still_pending:
                to = plan.resume_state or PlanState.ROLLED_BACK
                plan.resume_state = ""
                plan_move(plan, to=to, action="router_confirmed", actor=actor, reason=text)
            return
        reason, data = call_reason(call)
        plan_move(
            plan,
            to=PlanState.ROLLBACK_UNCONFIRMED,
            action="router_failed",
            actor=actor,
            reason=reason,
            reason_data=data,
            events=("rollback_unconfirmed",),
            obj=call,
        )
        return
    # A person may have paused the step while its router was being asked: the answer still
    # counts (the analysis starts paused, measured once resumed; a refusal needs a retry).
    on_step = plan.state == PlanState.RUNNING or (
        plan.state == PlanState.PAUSED and plan.resume_state == PlanState.RUNNING
    )
    if gate is None or not on_step or gate.state != GateState.ANALYSING:
        return
    if outcome == RouterOutcome.CONFIRMED:
        reading_baseline(plan, call, counters, at=at)
        if not still_pending:
            # Weights confirmed; a router whose served split is checked starts the clock
            # only once it served the share (rollout.services.router_watch).
            _step_clock(plan, gate, started=intended_at, at=None if split_pending(plan) else at)
        elif (
            not pending_calls(plan, operation="set").filter(outcome=RouterOutcome.INTENDED).exists()
        ):
            _step_clock(plan, gate, started=intended_at, at=None)  # only callbacks left
        return
    # Refused, timed out, another share: the step pauses; its routers not yet asked are not.
    RouterCall.objects.filter(
        plan=plan, operation="set", outcome=RouterOutcome.INTENDED, attempts=0
    ).delete()
    analysis_terminate(gate=gate, now=at)
    gate.state = GateState.TRAFFIC_UNCONFIRMED
    gate.save(update_fields=["state"])
    reason, data = call_reason(call)
    plan.resume_state = ""
    plan_move(
        plan,
        to=PlanState.PAUSED,
        action="router_failed",
        actor=actor,
        reason=reason,
        reason_data=data,
        events=("router_failed",),
        obj=gate,
    )


def _step_clock(plan: MigrationPlan, gate, *, started: datetime, at: datetime | None) -> None:
    """The step's analysis: started once its routers answered (``at``: the last read-back;
    ``None``: a callback will confirm), or its clock started if it runs already."""
    if gate.runs.filter(gate_revision=gate.revision).exists():
        if at is not None:
            analysis_traffic_confirmed(gate=gate, at=at)
        return
    if at is None:
        analysis_start(gate=gate, now=started, traffic_pending=True)
    else:
        analysis_start(gate=gate, now=started, traffic_at=at)
