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
from dashboards.report_sources import latest_ablation
from dashboards.selectors.report import CURVE_METRICS, ClusterFigures, cluster_figures
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
        for role in ("baseline", "unified"):
            name = params.get(role)
            if not name:
                raise ValidationError({role: "required: the cluster's name"})
            cluster = Cluster.objects.filter(name=name).first()
            if cluster is None:
                raise ValidationError({role: f"unknown cluster {name!r}"})
            out[role] = _figures_json(cluster_figures(cluster, window.start, window.end))
        out["ablation"] = latest_ablation()
        return Response(out)
