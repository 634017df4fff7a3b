"""Reads of the migration workflow. ``traffic_shares_for_cluster`` is what the twin calls."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q, QuerySet

from accounts.selectors.people import role_of, sees_people
from accounts.selectors.scoping import scope_to_tenant
from inventory.models import Workload
from rollout.models import (
    AuditEntry,
    Gate,
    GateState,
    MigrationPlan,
    PhaseKind,
    PlanState,
    PlanWorkload,
    RouterReading,
)
from rollout.models.plans import moved_elsewhere
from rollout.services.guards import APPROVE_PERMISSION, people_still_holding
from telemetry.models import Entity, ServingBinding
from telemetry.read import (
    DataSourceUnavailable,
    evidence_writers,
    latest_values,
    serving_canary_comparison,
)

# ``training_state`` of a job that has finished (the twin's 0 not submitted … 3 done).
TRAINING_DONE = 3.0


def traffic_shares_for_cluster(*, cluster_id: int) -> dict[str, float]:
    """Share (0–1) of each workload's traffic that migrations send to ``cluster_id``.

    For the unified target of a started plan: each workload's current share (pilot
    workloads 1 once the pilot starts, gray workloads the current step, later phases 0 until
    they begin; after an abort or rollback the last stable step). For the source cluster the
    complement (1 − share), so load moves between the two rather than being duplicated.
    Draft plans change nothing. Workloads are followed by identity: on the target the plan
    workload's counterpart (``target_workload``, the same tenant's), never whatever workload
    has the name there; a plan workload with no counterpart moves nothing onto the target.
    The names returned are those of the workloads on ``cluster_id`` (what the twin knows);
    when several plans name one workload the newest wins.
    """
    items = (
        PlanWorkload.objects.filter(
            Q(plan__target_cluster_id=cluster_id) | Q(plan__source_cluster_id=cluster_id)
        )
        .exclude(plan__state=PlanState.DRAFT)
        .order_by("plan__created_at", "plan_id")
        .values_list(
            "workload__name",
            "workload__cluster_id",
            "target_workload__name",
            "target_workload__cluster_id",
            "share",
        )
    )
    shares: dict[str, float] = {}
    for name, cluster, target_name, target_cluster, share in items:
        if target_name is not None and target_cluster == cluster_id:
            shares[target_name] = float(share)
        elif cluster == cluster_id:
            shares[name] = 1.0 - float(share)
    return shares


def workloads_movable(*, tenant_id: int, cluster_id: int) -> QuerySet[Workload]:
    """What a plan of ``tenant_id`` may move off ``cluster_id``: the tenant's workloads
    there, without finished training jobs (newest ``training_state`` within the hour is
    done; a job whose state is unknown stays listed) and without workloads another plan
    holds or fully moved (:func:`rollout.models.plans.moved_elsewhere`). The form offers
    only these; the plan service itself still accepts any of the tenant's workloads there."""
    taken = PlanWorkload.objects.filter(moved_elsewhere()).values("workload_id")
    workloads = Workload.objects.filter(tenant_id=tenant_id, cluster_id=cluster_id).exclude(
        pk__in=taken
    )
    entities = list(
        Entity.objects.filter(
            workload__in=workloads.filter(kind=Workload.Kind.TRAINING), kind="workload"
        )
    )
    latest = latest_values(entities)
    done = [
        e.workload_id
        for e in entities
        if latest.get(e.pk, {}).get("training_state") == TRAINING_DONE
    ]
    return workloads.exclude(pk__in=done).select_related("tenant", "cluster").order_by("name")


def plans_visible_to(user) -> QuerySet[MigrationPlan]:
    """Staff and operator-level tokens see every plan; customers their tenant's only."""
    plans = MigrationPlan.objects.select_related("tenant", "source_cluster", "target_cluster")
    return scope_to_tenant(plans, user)


def audit_visible_to(user) -> QuerySet[AuditEntry]:
    return scope_to_tenant(AuditEntry.objects.select_related("plan", "actor"), user, "plan__tenant")


def plan_timeline(plan: MigrationPlan) -> list[dict]:
    """Phases in order with planned and actual windows and whether each is current."""
    rows = []
    for phase in sorted(plan.phases.all(), key=lambda p: p.order):
        rows.append(
            {
                "phase": phase,
                "current": phase.kind == plan.current_phase and not plan.is_finished,
                "workloads": [w for w in plan.workloads.all() if w.phase == phase.kind],
            }
        )
    return rows


def redact_people(viewer, *, audit=(), approvals=(), gates=()) -> None:
    """For a customer, replace names and addresses by roles on these (unsaved) objects."""
    if sees_people(viewer):
        return
    roles: dict[tuple, str] = {}

    def role(user, label: str = "") -> str:
        key = (getattr(user, "pk", None), label if user is None else "")
        if key not in roles:
            roles[key] = role_of(user, label)
        return roles[key]

    for entry in audit:
        entry.actor_label = role(entry.actor, entry.actor_label)
        entry.source_ip = None
    for approval in approvals:
        approval.principal = role(approval.user, approval.principal)
    for gate in gates:
        gate.requested_by_role = role(gate.requested_by) if gate.requested_by_id else ""


def gate_choices(gate, user) -> dict:
    """What ``user`` may still do on ``gate``'s current revision, so screens offer only that.

    The requester of a promotion neither approves nor forces it (four-eyes); a person who
    decided (or voted to force) this revision does not do it again. ``approved`` /
    ``required``: distinct people who approved this revision so far, and how many it needs.
    """
    if gate is None:
        return {"approve": False, "force": False, "requester": False, "decided": False}
    user_id = getattr(user, "pk", None)
    requester = gate.requested_by_id is not None and gate.requested_by_id == user_id
    revision = gate.approvals.filter(revision=gate.revision)
    mine = revision.filter(user_id=user_id) if user_id is not None else revision.none()
    decided = mine.filter(decision__in=("approve", "reject")).exists()
    voted = mine.filter(decision="force").exists()
    # Counted as the workflow counts: distinct people who still hold the approver role.
    approved = people_still_holding(revision.filter(decision="approve"), APPROVE_PERMISSION)
    return {
        "approve": not requester and not decided,
        "force": not requester and not voted,
        "requester": requester,
        "decided": decided,
        "approved": approved,
        "required": gate.plan.required_approvals,
    }


def plan_routing(plan: MigrationPlan, *, staff: bool) -> dict:
    """The plan page's traffic section: each workload's router with the share asked and the
    share it confirmed, and the router calls step by step (answers only for staff: they may
    name internal addresses)."""
    items = list(plan.workloads.select_related("workload", "router").order_by("phase", "pk"))
    # The split each workload's router actually served, from its latest reading (weights are
    # what it was told; rollout.services.router_watch).
    observed: dict[int, RouterReading] = {}
    for reading in RouterReading.objects.filter(plan=plan).order_by("-at", "-id")[:200]:
        observed.setdefault(reading.plan_workload_id, reading)
    rows = [
        {
            "item": item,
            "reading": observed.get(item.pk),
            "router": item.router or plan.router,
            "own_router": item.router_id is not None,
            "unconfirmed": item.confirmed_share is None
            or abs(item.confirmed_share - item.share) > 0.005,
        }
        for item in items
    ]
    calls = list(
        plan.router_calls.select_related("plan_workload__workload").order_by("-at", "-id")[:100]
    )
    if not staff:
        for call in calls:
            call.answer = ""
    return {"rows": rows, "calls": calls, "real": any(r["router"] for r in rows)}


def _step_since(plan: MigrationPlan, item: PlanWorkload) -> datetime | None:
    """When the current step's traffic started: the newest analysis run's router-confirmed
    start (what its gate measures), else the workload's confirmation, else the gate's
    creation (the twin: shares take effect at commit)."""
    gate = plan.current_gate
    run = gate.runs.order_by("-started_at", "-id").first() if gate else None
    if run is not None and run.traffic_at is not None:
        return run.traffic_at
    if item.confirmed_at is not None:
        return item.confirmed_at
    return gate.created_at if gate else None


def plan_serving(plan: MigrationPlan, *, now: datetime) -> list[dict]:
    """The plan page's serving view for the current gray step: per gray workload the request
    split (requests per serving endpoint) and canary (its counterpart on the target) vs
    baseline (the workload on the source) TTFT/TPOT P50/P99 over one window, from the step's
    traffic start to ``now`` (the comparison Argo's analysis view and Kayenta give). Each row
    says why it has no figures: ``no_window``, ``no_counterpart``, ``unbound`` (no serving
    endpoint bound on either side and no twin serving series), ``no_samples`` (bound, but no
    scrape in the window) or ``unavailable`` (a PromQL source is down)."""
    if plan.current_phase != PhaseKind.GRAY or plan.is_finished:
        return []
    rows = []
    items = plan.workloads.filter(phase=PhaseKind.GRAY).select_related(
        "workload", "target_workload"
    )
    for item in items.order_by("pk"):
        row: dict = {"item": item, "problem": None}
        rows.append(row)
        since = _step_since(plan, item)
        if since is None or since >= now:
            row["problem"] = "no_window"
            continue
        row["start"], row["end"] = since, now
        if item.target_workload_id is None:
            row["problem"] = "no_counterpart"
            continue
        try:
            found = serving_canary_comparison(
                canary_cluster_id=plan.target_cluster_id,
                canary_workload_id=item.target_workload_id,
                baseline_cluster_id=plan.source_cluster_id,
                baseline_workload_id=item.workload_id,
                start=since,
                end=now,
            )
        except DataSourceUnavailable:
            row["problem"] = "unavailable"
            continue
        if not (found.canary.scrapes or found.baseline.scrapes):
            # Bound by an explicit mapping or by the workload's series selector (the read
            # then names the matched endpoints, ``<model>@<where>``).
            keys = [*found.canary.endpoints, *found.baseline.endpoints]
            bound = (
                any("@" in key for key in keys)
                or ServingBinding.objects.filter(
                    workload_id__in=[item.workload_id, item.target_workload_id]
                ).exists()
            )
            row["problem"] = "no_samples" if bound else "unbound"
            continue
        row["comparison"] = found
        row["figures"] = [
            (
                label,
                metric,
                getattr(found.canary, side).get(q),
                getattr(found.baseline, side).get(q),
            )
            for label, metric, side, q in (
                ("TTFT P50", "serving_ttft_seconds", "ttft", "p50"),
                ("TTFT P99", "serving_ttft_seconds", "ttft", "p99"),
                ("TPOT P50", "serving_tpot_seconds", "tpot", "p50"),
                ("TPOT P99", "serving_tpot_seconds", "tpot", "p99"),
            )
        ]
        row["endpoints"] = [
            ("canary", key, requests) for key, requests in found.canary.per_endpoint.items()
        ] + [("baseline", key, requests) for key, requests in found.baseline.per_endpoint.items()]
    return rows


# A writer made less than this before the plan (or after it) is flagged for the approvers: the
# planted exporter of issue 31 was made shortly before its plan.
EVIDENCE_RECENT = timedelta(days=7)


def plan_evidence_writers(plan: MigrationPlan) -> list[dict]:
    """The exporter targets, data source and serving bindings the plan's gates could count on
    its target cluster, each with its creator and approver, whether it counts on this plan
    (someone other than the requester made or approved it) and whether it is recent."""
    workload_ids = [
        pk
        for pair in plan.workloads.values_list("workload_id", "target_workload_id")
        for pk in pair
        if pk is not None
    ]
    since = plan.created_at - EVIDENCE_RECENT
    return [
        {
            "writer": w,
            "counts": w.counts_for(plan.created_by_id),
            "recent": w.created_at is not None and w.created_at >= since,
        }
        for w in evidence_writers(cluster_id=plan.target_cluster_id, workload_ids=workload_ids)
    ]


def overrides_between(*, source_id: int, target_id: int) -> list[dict]:
    """Every gate of a plan moving ``source_id`` → ``target_id`` that was promoted (or asked
    to be) past an analysis that did not pass: the plan, the gate, the outcome overridden,
    the reason, and how many approvals of its current revision said "override" — what the
    validation report lists beside the figures those moves produced (issue 30, item 6)."""
    gates = (
        Gate.objects.filter(plan__source_cluster_id=source_id, plan__target_cluster_id=target_id)
        .exclude(override_of="")
        .select_related("plan", "phase")
        .prefetch_related("approvals")
        .order_by("-requested_at", "-id")
    )
    rows = []
    for gate in gates:
        approvals = [a for a in gate.approvals.all() if a.revision == gate.revision]
        rows.append(
            {
                "plan": gate.plan,
                "gate": gate,
                "label": gate.label,
                "outcome": str(dict(GateState.choices).get(gate.override_of, gate.override_of)),
                "reason": gate.override_reason,
                "state": gate.get_state_display(),
                "override_approvals": sum(1 for a in approvals if a.override),
                "required": gate.plan.required_approvals,
                "requested_at": gate.requested_at,
            }
        )
    return rows
