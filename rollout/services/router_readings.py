"""Router readings as evidence (read by the analysis; no router is called here).

:mod:`rollout.services.router_watch` commits the readings; the analysis asks two things of
them over a measurement's window: did the served split leave the tolerance in it
(:func:`served_split_problem`: the measurement is Inconclusive), and how many of the target's
requests did the router itself fail (:func:`router_errors`: counted by the error-rate
criteria, since a request HAProxy could not deliver never reaches the engine's own counters).
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q

from rollout.analysis import semantics as S
from rollout.labels import reason_data
from rollout.models import MigrationPlan, ReadingVerdict, RouterReading

# Criteria whose value is a failed ÷ all ratio: the router's own failures count in them.
ERROR_RATIO_METRICS = ("serving_error_ratio",)


def counters_delta(now_counters: dict, base: dict) -> dict | None:
    """Counter increases between two readings; ``None`` after a reset (a restart)."""
    out: dict[str, dict[str, int]] = {}
    for side in ("source", "target"):
        a, b = now_counters.get(side) or {}, base.get(side) or {}
        out[side] = {k: int(a.get(k, 0)) - int(b.get(k, 0)) for k in ("requests", "errors")}
        if any(v < 0 for v in out[side].values()):
            return None
    return out


def _items_of(plan: MigrationPlan, spec: dict):
    """The plan workloads a criterion measures (its identity), else all of them."""
    items = plan.workloads.all()
    wid = spec.get("workload_id")
    if spec.get("entity_kind") == "workload" and wid:
        return items.filter(Q(target_workload_id=wid) | Q(workload_id=wid))
    return items


def served_split_problem(plan: MigrationPlan, spec: dict, start: datetime, end: datetime):
    """A reading in ``(start, end]`` whose served split left the tolerance, or ``None``."""
    return (
        RouterReading.objects.filter(
            plan=plan,
            plan_workload__in=_items_of(plan, spec),
            verdict=ReadingVerdict.OUT_OF_TOLERANCE,
            at__gt=start,
            at__lte=end,
        )
        .order_by("at")
        .first()
    )


def router_errors(plan: MigrationPlan, spec: dict, start: datetime, end: datetime):
    """``(errors, requests)`` the routers counted for the target in ``[start, end]`` (counter
    increases between the readings bracketing the window), or ``None`` without counters."""
    errors = requests = 0
    found = False
    for item in _items_of(plan, spec):
        readings = RouterReading.objects.filter(plan_workload=item).exclude(counters={})
        first = readings.filter(at__lte=start).order_by("-at", "-id").first()
        first = first or readings.filter(at__gt=start, at__lte=end).order_by("at", "id").first()
        last = readings.filter(at__lte=end).order_by("-at", "-id").first()
        if first is None or last is None or first.pk == last.pk:
            continue
        delta = counters_delta(last.counters, first.counters)
        if delta is None:
            continue
        found = True
        errors += delta["target"]["errors"]
        requests += delta["target"]["requests"]
    return (errors, requests) if found else None


def latest_readings(plan: MigrationPlan) -> dict[int, RouterReading]:
    """Each workload's latest reading (the plan page's "observed split")."""
    out: dict[int, RouterReading] = {}
    for reading in RouterReading.objects.filter(plan=plan).order_by("-at", "-id")[:200]:
        out.setdefault(reading.plan_workload_id, reading)
    return out


def router_evidence(
    plan: MigrationPlan,
    spec: dict,
    start: datetime,
    end: datetime,
    *,
    outcome: str,
    value: float | None,
    threshold: float | None,
    reason: str,
    data: dict | None,
) -> tuple[str, float | None, str, dict | None]:
    """A measurement's ``(outcome, value, reason, data)`` after what its routers show over
    its window (the analysis calls this on every measurement):

    - an error-rate criterion counts the router's own failures for the target: the value is
      the larger of the engines' ratio and the router's (errors ÷ requests it sent to the
      target), and the router's ratio alone fails a criterion it breaks (requests HAProxy
      could not deliver are in no engine's counters; its ratio includes the 5xx it relayed);
    - a served split outside the tolerance in the window makes a Successful measurement
      Inconclusive: never a pass on the wrong split. A Failed one stays Failed (the target
      failed on traffic customers sent it; rolling back is the safe side).
    """
    if outcome == S.ERROR:
        return outcome, value, reason, data
    if spec.get("metric") in ERROR_RATIO_METRICS:
        counted = router_errors(plan, spec, start, end)
        if counted is not None and counted[1] > 0:
            errors, requests = counted
            ratio = errors / requests
            limit = threshold
            if limit is None and not spec.get("compare_to_baseline"):
                limit = float(spec["threshold"])
            note = f"router: {errors} of {requests} target requests failed ({ratio:.4g})"
            parts = [data or reason_data("text", text=reason)]
            parts.append(reason_data("router_errors", errors=errors, requests=requests))
            if limit is not None and not S.compare(ratio, spec["comparator"], limit):
                symbol = {"lt": "<", "le": "≤", "gt": ">", "ge": "≥"}[spec["comparator"]]
                outcome, value = S.FAILED, max(ratio, value or 0.0)
                note += f", not {symbol} {limit:.4g}"
            elif value is not None:
                value = max(value, ratio)
            reason = f"{reason}; {note}"
            data = {"parts": parts, "joiner": "; "}
    if outcome == S.SUCCESSFUL:
        moved = served_split_problem(plan, spec, start, end)
        if moved is not None:
            outcome = S.INCONCLUSIVE
            reason = f"served split left the tolerance at {moved.at:%H:%M:%S}: {moved.detail}"
            data = reason_data(
                "split_out_of_tolerance", at=f"{moved.at:%H:%M:%S}", detail=moved.detail
            )
    return outcome, value, reason, data
