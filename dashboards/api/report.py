"""The validation report's figures over the API (staff): ``?baseline=&unified=&range=``."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.selectors.scoping import principal_sees_all
from cluster_portal.web.schema import TIME_RANGE_PARAMETERS
from cluster_portal.web.timerange import TimeRangeError, parse_timerange
from cost.api.views import _stat, cluster_cost_json
from dashboards.selectors.report import (
    CURVE_METRICS,
    ClusterFigures,
    ReportRefused,
    report_decision,
)
from dashboards.selectors.report_decision import default_range
from inventory.models import Cluster


def _latency(figure) -> dict:
    """A percentile of the window's requests (``exact``), or the labelled approximation;
    ``value`` null over no requests (``no_requests``)."""
    return {
        "value": figure.seconds,
        "requests": figure.requests,
        "exact": figure.exact,
        "no_requests": figure.no_requests,
        "method": "merged histograms" if figure.exact else "mean of per-step P99 (approximation)",
    }


def _side_json(side) -> dict | None:
    if side is None:
        return None
    return {
        "cluster": side.cluster,
        "cards_held": side.cards,
        "requests": side.requests,
        "requests_per_second": side.requests_per_second,
        "tokens_per_second": side.tokens_per_second,
        "tokens_per_second_per_card": side.tokens_per_card,
        "latency": {
            figure: {q: _latency(p) for q, p in quantiles.items()}
            for figure, quantiles in side.latency.items()
        },
        "verdicts": {key: v.met for key, v in side.verdicts.items()},
    }


def _recommendation_json(r) -> dict:
    return {
        "outcome": r.outcome,
        "reasons": r.reasons,
        "slo": {
            "judged_on_both_sides": r.judged,
            "source_met": r.source_met,
            "target_met": r.target_met,
            "regressions": r.regressions,
        },
        "cost_per_million_tokens": {
            "source": r.source_cost_per_million,
            "target": r.target_cost_per_million,
            "target_over_source": r.cost_ratio,
        },
        "saving_per_month": r.saving_per_month,
        "payback_months": r.payback_months,
        "currency": r.currency,
    }


def _figures_json(f: ClusterFigures) -> dict:
    return {
        "cluster": f.cluster.name,
        "cards": f.cards,
        "inference_cards_held": f.inference_cards.mean if f.inference_cards else None,
        "training_cards_held": f.training_cards.mean if f.training_cards else None,
        "requests": f.serving.requests,
        "training_samples_per_second": _stat(f.samples),
        # Like for like across cluster sizes: per card the work held.
        "training_samples_per_second_per_card": f.samples_per_card,
        "inference_tokens_per_second_per_card": f.tokens_per_card,
        # TTFT and TPOT P99 are the headline latency; end-to-end is secondary. Each is the
        # percentile of every request of every service in the window (merged histograms).
        "inference_ttft_p99_seconds": _latency(f.ttft),
        "inference_tpot_p99_seconds": _latency(f.tpot),
        "inference_p99_seconds": _latency(f.p99),
        "utilization": {m: _stat(f.curve_stats[m]) for m in CURVE_METRICS},
        "hbm_live_ratio": _stat(f.hbm),
        "cost": cluster_cost_json(f.cost),
    }


@extend_schema(
    parameters=[
        OpenApiParameter("baseline", str, required=True, description="Split cluster's name."),
        OpenApiParameter("unified", str, required=True, description="Unified cluster's name."),
        *TIME_RANGE_PARAMETERS,
    ],
    responses=OpenApiTypes.OBJECT,
)
class ReportView(APIView):
    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    def get(self, request: Request) -> Response:
        if not principal_sees_all(request.user):
            raise PermissionDenied("The validation report is visible to cluster staff only.")
        params = request.query_params.copy()
        if not params.get("range") and not params.get("start"):
            params["range"] = default_range()
        try:
            window = parse_timerange(params)
        except TimeRangeError as error:
            raise ValidationError(error.errors) from None
        out = {"window": window.as_json()}
        chosen = {}
        for role in ("baseline", "unified"):
            name = params.get(role)
            if not name:
                raise ValidationError({role: "required: the cluster's name"})
            cluster = Cluster.objects.filter(name=name).select_related("hardware_model").first()
            if cluster is None:
                raise ValidationError({role: f"unknown cluster {name!r}"})
            chosen[role] = cluster
        try:
            decision = report_decision(
                chosen["baseline"], chosen["unified"], window.start, window.end
            )
        except ReportRefused as refused:
            raise ValidationError({"window": str(refused)}) from None
        # The one coverage statement: every figure below is computed over this window (the
        # overlap of both sides' data within the asked one); null when they do not overlap.
        lo, hi = decision.compared or (None, None)
        out["coverage"] = {
            "compared_start": lo.isoformat() if lo else None,
            "compared_end": hi.isoformat() if hi else None,
            "compared_seconds": decision.compared_seconds,
            "window_seconds": decision.window_seconds,
        }
        out["baseline"] = _figures_json(decision.base)
        out["unified"] = _figures_json(decision.uni)
        out["verdicts"] = [
            {
                "cluster": v.cluster,
                "service": v.service,
                "target": v.target,
                "target_seconds": v.target_seconds,
                "measured_seconds": v.measured_seconds,
                "requests": v.measured.requests,
                "exact": v.measured.exact,
                "met": v.met,
            }
            for v in decision.verdicts
        ]
        out["services"] = [
            {
                "service": pair.service,
                "source": _side_json(pair.source),
                "target": _side_json(pair.target),
            }
            for pair in decision.pairs
        ]
        out["recommendation"] = _recommendation_json(decision.recommendation)
        out["money"] = _money_json(decision) if decision.compared else None
        out["ablation"] = decision.ablation
        out["overrides"] = [
            {
                "plan": o["plan"].pk,
                "plan_name": o["plan"].name,
                "gate": o["label"],
                "analysis_overridden": o["gate"].override_of,
                "reason": o["reason"],
                "override_approvals": o["override_approvals"],
                "approvals_required": o["required"],
                "gate_state": o["gate"].state,
            }
            for o in decision.overrides
        ]
        return Response(out)


def _money_json(decision) -> dict | None:
    cmp = decision.comparison
    if cmp.tco is None:
        return None
    return {
        "currency": cmp.unified.inputs.currency,
        "saving_per_month": cmp.tco.saving_per_month,
        "payback_months": cmp.payback_months,
        "inputs": {
            "workload_cards": cmp.tco.workload_cards,
            "unified_allocated_ratio": cmp.unified.allocated.mean,
            "baseline_allocated_ratio": cmp.baseline.allocated.mean,
            "per_card_hour": cmp.unified.asset.per_card_hour,
            "unified_cards_needed": cmp.tco.unified_cards_needed,
            "split_cards_needed": cmp.tco.split_cards_needed,
            "migration_cost": cmp.migration.value,
            "migration_cost_assumed": cmp.migration.assumed,
            "prices_assumed": cmp.unified.inputs.is_assumption,
        },
    }
