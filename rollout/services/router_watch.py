"""Watching what the routers actually do during a step: re-read every analysis interval.

A weight read back is what a router was told; it is not what it served (HAProxy's
``static-rr`` ignores runtime weight changes outright; ``leastconn`` at low concurrency splits
by connection count, whatever the weights — see ``docs/traffic-routers.md``), and a restart
puts the weights back to the configuration's. So, for every running plan whose gate is
analysing, :func:`routers_reread` (the analysis beat, before the measurements) reads each
real router again **outside any transaction** and commits one :class:`RouterReading` per
workload:

- the weights no longer give the share confirmed, or the router cannot be read: the plan
  **pauses** with "router no longer applies the share" (audited, the gate
  ``traffic_unconfirmed``; ``retry`` pushes the share again and reads it back);
- with a split tolerance (``TrafficRouter.split_tolerance_points``) and counters to read
  (HAProxy ``show stat``), the split the target **served** over the last
  ``split_window_seconds`` (at least ``split_min_requests`` requests): the step's analysis
  clock starts at the first reading within tolerance (never at the weights' read-back); one
  outside it later makes the measurements whose window it falls in Inconclusive
  (:func:`rollout.services.router_readings.served_split_problem`); a split still not within
  tolerance ``confirm_within_seconds`` after the share was set pauses the step;
- the router's own failures for the target (5xx, connection and response errors) over a
  window are :func:`rollout.services.router_readings.router_errors`, counted by the
  error-rate criteria.

A deploy tool's webhook has no read contract: its confirmation is the last word (no counters).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from rollout.labels import reason_data
from rollout.models import (
    Gate,
    GateState,
    MigrationPlan,
    PlanState,
    PlanWorkload,
    ReadingVerdict,
    RouterCall,
    RouterKind,
    RouterOutcome,
    RouterReading,
    TrafficRouter,
)
from rollout.routers import RouterError, router_client
from rollout.services.analysis import analysis_terminate, analysis_traffic_confirmed
from rollout.services.audit import SYSTEM
from rollout.services.plans import plan_lock, plan_move
from rollout.services.router_readings import counters_delta as _delta
from rollout.services.traffic import SHARE_TOLERANCE, pending_calls, router_of


def split_checked(config: TrafficRouter | None) -> bool:
    """Whether this router's served split (not only its weights) confirms a share."""
    return (
        config is not None
        and config.kind == RouterKind.HAPROXY
        and config.split_tolerance_points is not None
    )


def router_counters(config: TrafficRouter | None) -> dict | None:
    """The router's cumulative counters, read outside any transaction; ``None`` if it has none
    or they cannot be read now (the next re-read tries again)."""
    if config is None or config.kind != RouterKind.HAPROXY:
        return None
    try:
        return router_client(config).counters()
    except RouterError:
        return None


def reading_baseline(
    plan: MigrationPlan, call: RouterCall, counters: dict | None, *, at: datetime
) -> None:
    """The counters at a share's confirmation: where its served split's window starts."""
    if counters is None:
        return
    RouterReading.objects.create(
        plan=plan,
        plan_workload_id=call.plan_workload_id,
        call=call,
        at=at,
        asked_share=call.desired_share,
        weights_share=call.confirmed_share,
        counters=counters,
        verdict=ReadingVerdict.BASELINE,
    )


def split_pending(plan: MigrationPlan) -> bool:
    """Whether a workload of the plan still waits for its served split to reach its share."""
    return any(_awaits_split(item, plan) for item in _watched(plan))


@dataclass
class _Read:
    item_id: int
    call_id: int
    weights: float | None = None
    counters: dict | None = None
    failure: str = ""


def routers_reread(*, now: datetime | None = None) -> int:
    """Re-read the routers of every running plan whose gate is analysing (module docstring);
    the number of readings committed."""
    plan_ids = list(
        MigrationPlan.objects.filter(
            state=PlanState.RUNNING, current_gate__state=GateState.ANALYSING
        )
        .filter(Q(router__isnull=False) | Q(workloads__router__isnull=False))
        .values_list("pk", flat=True)
        .distinct()
    )
    return sum(plan_routers_reread(plan_id=pk, now=now) for pk in plan_ids)


def plan_routers_reread(*, plan_id: int, now: datetime | None = None) -> int:
    plan = MigrationPlan.objects.select_related("router").get(pk=plan_id)
    reads: list[_Read] = []
    for item, call, config in _watched(plan):
        read = _Read(item.pk, call.pk)
        try:  # outside any transaction: the router may take its whole deadline
            client = router_client(config)
            read.weights = client.read_share()
            if config.kind == RouterKind.HAPROXY:  # the split and the router's own errors
                read.counters = client.counters()
        except RouterError as exc:
            read.failure = f"{exc.code}: {exc.detail}"
        reads.append(read)
    if not reads:
        return 0
    now = now or timezone.now()
    with transaction.atomic():
        plan = plan_lock(plan_id)
        gate = plan.current_gate
        if plan.state != PlanState.RUNNING or gate is None or gate.state != GateState.ANALYSING:
            return 0
        written = 0
        for read in reads:
            item = PlanWorkload.objects.select_related("workload", "router").get(pk=read.item_id)
            call = _latest_call(item)
            if call is None or call.pk != read.call_id:
                continue  # a newer call replaced the one read: its own reading follows
            config = router_of(item, plan)
            reading = _judge(item, call, config, read, now=now)
            written += 1
            if reading.verdict in (ReadingVerdict.DRIFT, ReadingVerdict.NOT_SERVED):
                _pause(plan, gate, item, reading, now=now)
                return written
        if not split_pending(plan) and not pending_calls(plan, operation="set").exists():
            analysis_traffic_confirmed(gate=gate, at=now)  # a clock waiting on the split
    return written


def _watched(plan: MigrationPlan):
    """(workload, its latest call, its router) for each workload whose real router last
    confirmed a share (a pending or failed call is the dispatcher's or callback's business)."""
    items = plan.workloads.select_related("workload", "router").order_by("pk")
    for item in items:
        config = router_of(item, plan)
        if config is None or config.kind == RouterKind.TWIN:
            continue
        call = _latest_call(item)
        if call is None or call.outcome != RouterOutcome.CONFIRMED:
            continue
        if config.kind == RouterKind.WEBHOOK:
            continue  # no read contract: the tool's confirmation stands
        yield item, call, config


def _latest_call(item: PlanWorkload) -> RouterCall | None:
    return RouterCall.objects.filter(plan_workload=item).order_by("-id").first()


def _awaits_split(watched, plan: MigrationPlan) -> bool:
    item, call, config = watched
    if not split_checked(config):
        return False
    return not RouterReading.objects.filter(
        call=call, verdict__in=(ReadingVerdict.WITHIN, ReadingVerdict.OUT_OF_TOLERANCE)
    ).exists()


def _judge(
    item: PlanWorkload, call: RouterCall, config: TrafficRouter, read: _Read, *, now: datetime
) -> RouterReading:
    asked = call.desired_share
    reading = RouterReading(
        plan_id=item.plan_id,
        plan_workload=item,
        call=call,
        at=now,
        asked_share=asked,
        weights_share=read.weights,
        counters=read.counters or {},
    )
    if read.failure:
        reading.verdict = ReadingVerdict.DRIFT
        reading.detail = f"the router could not be read: {read.failure}"[:500]
    elif read.weights is None or abs(read.weights - asked) >= SHARE_TOLERANCE:
        reading.verdict = ReadingVerdict.DRIFT
        reading.detail = f"its weights give {read.weights:.4g}% where {asked:g}% was confirmed"
    elif read.counters is None or not split_checked(config):
        reading.verdict = ReadingVerdict.WITHIN
        reading.detail = "weights only"
    else:
        _split(reading, call, config, now=now)
    reading.save()
    return reading


def _split(reading: RouterReading, call: RouterCall, config: TrafficRouter, *, now) -> None:
    window = timedelta(seconds=config.split_window_seconds)
    earlier = RouterReading.objects.filter(call=call, at__lt=now).exclude(counters={})
    base = earlier.filter(at__lte=now - window).order_by("-at", "-id").first()
    awaiting = not earlier.filter(
        verdict__in=(ReadingVerdict.WITHIN, ReadingVerdict.OUT_OF_TOLERANCE)
    ).exists()
    since = call.confirmed_at or call.at
    late = awaiting and (now - since).total_seconds() > config.confirm_within_seconds
    delta = None if base is None else _delta(reading.counters, base.counters)
    if delta is not None:
        total = delta["source"]["requests"] + delta["target"]["requests"]
        reading.window_start, reading.window_requests = base.at, max(0, total)
        reading.target_requests = delta["target"]["requests"]
        reading.target_errors = delta["target"]["errors"]
        if total > 0:
            reading.served_share = 100.0 * delta["target"]["requests"] / total
    tolerance = config.split_tolerance_points
    if delta is None or reading.window_requests < config.split_min_requests:
        reading.verdict = ReadingVerdict.NOT_SERVED if late else ReadingVerdict.TOO_FEW
        reading.detail = (
            f"{reading.window_requests} of {config.split_min_requests} requests needed over "
            f"{config.split_window_seconds} s"
            if base is not None
            else f"the {config.split_window_seconds} s window has not elapsed yet"
        )
        return
    within = abs(reading.served_share - call.desired_share) <= tolerance
    served = f"served {reading.served_share:.1f}% of {reading.window_requests} requests"
    reading.detail = f"{served}, asked {call.desired_share:g}% ± {tolerance:g}"
    if within:
        reading.verdict = ReadingVerdict.WITHIN
    elif awaiting:
        reading.verdict = ReadingVerdict.NOT_SERVED if late else ReadingVerdict.SETTLING
    else:
        reading.verdict = ReadingVerdict.OUT_OF_TOLERANCE


def _pause(
    plan: MigrationPlan, gate: Gate, item: PlanWorkload, reading: RouterReading, *, now
) -> None:
    """The step cannot be measured on traffic the router no longer moves as asked."""
    analysis_terminate(gate=gate, now=now)
    gate.state = GateState.TRAFFIC_UNCONFIRMED
    gate.save(update_fields=["state"])
    item.confirmed_share = None if reading.weights_share is None else reading.weights_share / 100
    item.confirmed_at = now if reading.weights_share is not None else None
    item.save(update_fields=["confirmed_share", "confirmed_at"])
    code = "router_drift" if reading.verdict == ReadingVerdict.DRIFT else "router_not_served"
    label = item.router.name if item.router_id else (plan.router.name if plan.router else "")
    head = (
        "router no longer applies the share"
        if code == "router_drift"
        else "the served split never reached the share"
    )
    text = f"{head}: {label} for {item.workload.name}: {reading.detail}"
    plan.resume_state = ""
    plan_move(
        plan,
        to=PlanState.PAUSED,
        action=code,
        actor=SYSTEM,
        reason=text[:500],
        reason_data=reason_data(
            code, router=label, workload=item.workload.name, detail=reading.detail
        ),
        events=("router_failed",),
        obj=gate,
    )
