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
from dashboards.selectors.report import CURVE_METRICS, ClusterFigures, report_decision
from inventory.models import Cluster


def _latency(figure) -> dict | None:
    if figure is None:
        return None
    return {"value": figure.value_seconds, "services": figure.services, "values": figure.values}


def _figures_json(f: ClusterFigures) -> dict:
    return {
        "cluster": f.cluster.name,
        "cards": f.cards,
        "training_samples_per_second": _stat(f.samples),
        # Like for like across cluster sizes: per card.
        "training_samples_per_second_per_card": f.samples_per_card,
        "inference_tokens_per_second_per_card": f.tokens_per_card,
        # TTFT and TPOT P99 are the headline latency; end-to-end is secondary.
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
            params["range"] = "24h"
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
        decision = report_decision(chosen["baseline"], chosen["unified"], window.start, window.end)
        out["coverage"] = {
            role: {"covered_seconds": c.covered_seconds, "window_seconds": c.window_seconds}
            for role, c in decision.coverage.items()
        }
        out["compared_window"] = (
            None
            if decision.compared is None
            else {
                "start": decision.compared[0].isoformat(),
                "end": decision.compared[1].isoformat(),
            }
        )
        out["baseline"] = _figures_json(decision.base)
        out["unified"] = _figures_json(decision.uni)
        out["verdicts"] = [
            {
                "cluster": v.cluster,
                "service": v.service,
                "target": v.target,
                "target_seconds": v.target_seconds,
                "measured_seconds": v.measured_seconds,
                "values": v.values,
                "met": v.met,
            }
            for v in decision.verdicts
        ]
        out["money"] = _money_json(decision) if decision.compared else None
        out["ablation"] = decision.ablation
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
