"""Cost data endpoints: per-cluster cost and the unified-vs-split comparison (staff), and
tenant showback (customers: their own tenant only)."""

from __future__ import annotations

import functools
from dataclasses import asdict
from datetime import UTC, datetime, timedelta

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.models import Tenant
from accounts.selectors.scoping import principal_sees_all
from cluster_portal.web.caching import cached_payload
from cost.allocation import hour_start
from cost.hours import WindowNotCovered
from cost.ledger import Ledger
from cost.selectors import (
    INPUT_FIELDS,
    ClusterCost,
    clusters_cost,
    compare_policies,
    default_pair,
    refuse_uncovered,
    tenant_ledger_json,
    tenant_ledgers,
    tenant_showback,
)
from telemetry.read import WindowStat

MAX_HOURS = 24 * 400
HOURS = OpenApiParameter("hours", float, description="Window length in hours (default 24).")


def _window(request: Request) -> tuple[datetime, datetime]:
    raw = request.query_params.get("hours", "24")
    try:
        hours = float(raw)
    except ValueError:
        raise ValidationError({"hours": "a number of hours, e.g. 24"}) from None
    if not 0 < hours <= MAX_HOURS:
        raise ValidationError({"hours": f"between 0 and {MAX_HOURS}"})
    end = datetime.now(tz=UTC)
    return end - timedelta(hours=hours), end


def window_refusals_are_400(get):
    """A window the ledger cannot cover is a 400 naming the hours and why, not a smaller bill."""

    @functools.wraps(get)
    def wrapped(self, request: Request, *args, **kwargs) -> Response:
        try:
            return get(self, request, *args, **kwargs)
        except WindowNotCovered as refused:
            raise ValidationError({"hours": str(refused)}) from None

    return wrapped


def _stat(stat: WindowStat | None) -> dict | None:
    return (
        None if stat is None else {"metric": stat.metric, "mean": stat.mean, "samples": stat.count}
    )


def cluster_cost_json(c: ClusterCost) -> dict:
    a, alloc = c.asset, c.allocation
    return {
        "cluster": c.cluster.name,
        "kind": c.cluster.kind,
        "window": {"start": c.start.isoformat(), "end": c.end.isoformat()},
        "cards": c.cards,
        "inputs": {
            "applies_to": c.assumptions.cluster.name if c.assumptions.cluster_id else "default",
            **{name: getattr(c.inputs, name) for name in INPUT_FIELDS},
        },
        "asset": None
        if a is None
        else {
            "capex_per_hour": a.capex_per_hour,
            "energy_per_hour": a.energy.cost_per_hour,
            "energy_source": "measured" if a.energy.measured else "tdp_x_load_factor",
            "it_power_watts": a.energy.it_power_watts,
            "operations_per_hour": a.operations_per_hour,
            "per_hour": a.per_hour,
            "per_card_hour": a.per_card_hour,
        },
        "workload_per_hour": alloc.workload_per_hour if alloc and c.has_usage else None,
        "idle_per_hour": alloc.idle_per_hour if alloc and c.ledger else None,
        "ledger": ledger_json(c.ledger),
        "cost_per_1m_tokens": c.cost_per_million_tokens,
        "tokens_per_second_per_inference_card": c.tokens_per_inference_card,
        "inference_cards_held_mean": c.inference_cards_held,
        "cost_per_1k_samples": c.cost_per_thousand_samples,
        "measurements": {
            "power": _stat(c.power),
            "allocated_ratio": _stat(c.allocated),
            "busy_ratio": _stat(c.busy),
            "tokens_per_second": _stat(c.tokens),
            "samples_per_second": _stat(c.samples),
        },
    }


def _idle_by_tenant(ledger: Ledger) -> list[dict]:
    slugs = dict(Tenant.objects.filter(pk__in=list(ledger.idle_held)).values_list("pk", "slug"))
    return [
        {"tenant": slugs.get(pk, ""), "card_hours": round(seconds / 3600.0, 4), "cents": cents}
        for pk, (seconds, cents) in sorted(ledger.idle_held.items(), key=lambda kv: -kv[1][1])
    ]


def ledger_json(ledger: Ledger | None) -> dict | None:
    """The ledger in whole cents (billed + idle = cost exactly), with its coverage and hours."""
    if ledger is None:
        return None
    return {
        "currency": ledger.currency,
        "window_seconds": ledger.window_seconds,
        "covered_seconds": ledger.covered_seconds,
        "cost_cents": ledger.cost_cents,
        "billed_cents": ledger.billed_cents,
        "idle_cents": ledger.idle_cents,
        # Idle split: cards a scheduler job held while they read idle (the holders'), and
        # the rest (the operator's); billed + allocated + unallocated idle = cost.
        "allocated_idle_cents": ledger.allocated_idle_cents,
        "unallocated_idle_cents": ledger.unallocated_idle_cents,
        "allocated_idle_by_tenant": _idle_by_tenant(ledger),
        "mean_cards_held": ledger.mean_cards_held,
        "overcommitted_hours": ledger.overcommitted_hours,
        # Whole hours from ``start``: closed ones are the persisted ledger's (``revision``:
        # how often late data revised it); ``closing`` / ``open`` ones are not final yet.
        "start": hour_start(ledger.start).isoformat() if ledger.start is not None else None,
        "closed_hours": ledger.closed_hours,
        "revised_hours": ledger.revised_hours,
        "hours": [
            {
                "start": hour_start(h.start).isoformat(),
                "covered_seconds": h.covered_seconds,
                "cost_cents": h.cost_cents,
                "billed_cents": h.billed_cents,
                "idle_cents": h.idle_cents,
                "allocated_idle_cents": h.allocated_idle_cents,
                "unallocated_idle_cents": h.unallocated_idle_cents,
                "overcommitted": h.overcommitted,
                "state": h.state,
                "revision": h.revision,
            }
            for h in ledger.hours
        ],
    }


class StaffOnlyMixin:
    def check_staff(self, request: Request) -> None:
        if not principal_sees_all(request.user):
            raise PermissionDenied("Cluster cost is visible to cluster staff only; see showback.")


@extend_schema(parameters=[HOURS], responses=OpenApiTypes.OBJECT)
class ClusterCostView(StaffOnlyMixin, APIView):
    """``GET ?hours=24``: every cluster's cost figures with their inputs and sources."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    @window_refusals_are_400
    def get(self, request: Request) -> Response:
        self.check_staff(request)
        start, end = _window(request)
        return Response(
            cached_payload(
                request,
                "cost-clusters",
                lambda: {
                    "results": [
                        cluster_cost_json(c) for c in refuse_uncovered(clusters_cost(start, end))
                    ]
                },
            )
        )


@extend_schema(
    parameters=[
        HOURS,
        OpenApiParameter("unified", str, description="Unified cluster's name."),
        OpenApiParameter("baseline", str, description="Baseline (split) cluster's name."),
    ],
    responses=OpenApiTypes.OBJECT,
)
class CostComparisonView(StaffOnlyMixin, APIView):
    """``GET ?hours=&unified=NAME&baseline=NAME``: same-workload TCO and both ledgers."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    @window_refusals_are_400
    def get(self, request: Request) -> Response:
        self.check_staff(request)
        start, end = _window(request)
        return Response(
            cached_payload(request, "cost-comparison", lambda: self.build(request, start, end))
        )

    def build(self, request: Request, start, end) -> dict:
        costs = refuse_uncovered(clusters_cost(start, end))
        unified, baseline = default_pair(costs)
        by_name = {c.cluster.name: c for c in costs}
        for param in ("unified", "baseline"):
            name = request.query_params.get(param)
            if name and name not in by_name:
                raise ValidationError({param: f"unknown cluster {name!r}"})
        unified = by_name.get(request.query_params.get("unified", ""), unified)
        baseline = by_name.get(request.query_params.get("baseline", ""), baseline)
        if unified is None or baseline is None or unified is baseline:
            raise ValidationError({"unified": "need a unified and a different baseline cluster"})
        comparison = compare_policies(unified, baseline)
        tco = comparison.tco
        return {
            "unified": cluster_cost_json(unified),
            "baseline": cluster_cost_json(baseline),
            "same_workload_tco": None
            if tco is None
            else {**asdict(tco), "saving_per_month": tco.saving_per_month},
            "payback_months": comparison.payback_months,
            "migration_cost": {
                "value": comparison.migration.value,
                "assumed": comparison.migration.assumed,
            },
            "customer_ledgers": [tenant_ledger_json(t) for t in tenant_ledgers(comparison)],
            "internal_ledger": {
                **asdict(comparison.ledger),
                "budget_left": comparison.ledger.budget_left,
                "within_budget": comparison.ledger.within_budget,
            },
        }


@extend_schema(
    parameters=[HOURS, OpenApiParameter("tenant", str, description="Tenant slug (staff).")],
    responses=OpenApiTypes.OBJECT,
)
class ShowbackView(APIView):
    """``GET ?hours=&tenant=SLUG``: workloads' cost. Customers and tenant tokens get their own
    tenant whatever they ask for another; staff name a tenant or get every tenant."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    @window_refusals_are_400
    def get(self, request: Request) -> Response:
        start, end = _window(request)
        user = request.user
        slug = request.query_params.get("tenant")
        if principal_sees_all(user):
            tenants = Tenant.objects.all()
            if slug:
                tenants = tenants.filter(slug=slug)
                if not tenants.exists():
                    raise ValidationError({"tenant": f"unknown tenant {slug!r}"})
        else:
            if user.tenant_id is None:
                raise PermissionDenied("No tenant.")
            if slug and slug != user.tenant.slug:
                raise PermissionDenied("Customers see only their own tenant.")
            tenants = Tenant.objects.filter(pk=user.tenant_id)
        unified, baseline = default_pair(refuse_uncovered(clusters_cost(start, end)))
        by_tenant = {}
        if unified is not None and baseline is not None:
            by_tenant = {t.tenant: t for t in tenant_ledgers(compare_policies(unified, baseline))}
        results, ledgers = [], []
        for tenant in tenants:
            for row in tenant_showback(tenant.pk, start, end):
                results.append({"tenant": tenant.slug, **asdict(row)})
            if tenant.slug in by_tenant:
                ledgers.append(tenant_ledger_json(by_tenant[tenant.slug]))
        return Response(
            {
                "window": {"start": start.isoformat(), "end": end.isoformat()},
                "results": results,
                # The customer ledger: this tenant's workloads on split vs unified, payback.
                "customer_ledgers": ledgers,
            }
        )
