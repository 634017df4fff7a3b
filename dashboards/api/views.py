"""REST data endpoints of the dashboards: the same JSON the pages chart.

Every endpoint answers ``{"kpis", "figures", "tables", "range", "updated", ...}``; with
``?format=csv&table=NAME`` it answers that table (every chart's series is a table of the
chart's name) as CSV. Time range: ``?range=1h|6h|24h|7d|30d`` or ``?start=&end=``.

Queries per request (measured in ``tests/monitoring/test_dashboards_api.py`` including the
session's, independent of cluster size): overview 46, hardware 17, memory 43, network 33,
workload list 26 (+~12 per extra cluster). Fleet data comes from the newest frame per metric and
range data from rollups, never from raw history (see :mod:`dashboards.selectors`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.selectors.scoping import principal_sees_all
from cluster_portal.web.caching import RANGE_PARAMS, cached_json, cached_payload
from cluster_portal.web.csv import table_csv
from cluster_portal.web.errors import form_validation_error
from cluster_portal.web.filters import reject_unknown_params
from cluster_portal.web.jsonbody import FastJSONRenderer, json_bytes, with_key
from cluster_portal.web.schema import (
    CLUSTER_PARAMETER,
    CSV_PARAMETERS,
    DASHBOARD_RESPONSES,
    TIME_RANGE_PARAMETERS,
)
from cluster_portal.web.timerange import TimeRange, TimeRangeError, parse_timerange
from dashboards.forms import WORKLOAD_LIST_EXTRA_PARAMS, WorkloadListForm
from dashboards.payloads.common import mark_data_start, source_text
from dashboards.payloads.hardware import (
    entity_series_payload,
    hardware_payload,
    members_table,
)
from dashboards.payloads.memory import memory_payload
from dashboards.payloads.network import network_payload
from dashboards.payloads.overview import overview_payload
from dashboards.payloads.workloads import (
    workload_detail_payload,
    workload_list_table,
)
from dashboards.selectors.common import cluster_pick
from dashboards.selectors.hardware import (
    CARD_SERIES,
    entity_series,
    hardware,
    node_detail,
    node_series,
    rack_detail,
)
from dashboards.selectors.memory import memory
from dashboards.selectors.network import network
from dashboards.selectors.overview import overview
from dashboards.selectors.workload_list import PAGE_SIZE, STATE_FILTERS, workload_list
from dashboards.selectors.workloads import (
    workload_detail,
    workloads_visible_to,
)
from inventory.models import Accelerator, Cluster, Node, Rack, Workload
from telemetry.models import Entity

MAX_PAGE_SIZE = 1000


def _page_size(raw: str | None) -> int:
    if not raw:
        return PAGE_SIZE
    try:
        size = int(raw)
    except ValueError:
        size = 0
    if not 1 <= size <= MAX_PAGE_SIZE:
        raise ValidationError({"page_size": f"a whole number from 1 to {MAX_PAGE_SIZE}"})
    return size


class CSVRenderer(BaseRenderer):
    """Lets ``?format=csv`` through DRF's content negotiation; views answer CSV themselves,
    so this only renders error bodies — as JSON problem details, like every API error (a
    client asking for CSV still learns which field was wrong, in the one error shape)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        response = (renderer_context or {}).get("response")
        if response is not None:
            response["Content-Type"] = "application/json"
        return json_bytes(data)


class DashboardView(APIView):
    """Base: scope ``read``, staff only unless ``customers_allowed``, range and CSV handling."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"
    renderer_classes = [FastJSONRenderer, CSVRenderer]
    customers_allowed = False
    # True for pages that show the newest values only (no time axis): they ignore the range.
    range_independent = False

    def build(self, request: Request, tr: TimeRange, **kwargs) -> dict:
        raise NotImplementedError

    @extend_schema(responses=DASHBOARD_RESPONSES, parameters=TIME_RANGE_PARAMETERS + CSV_PARAMETERS)
    def get(self, request: Request, **kwargs) -> Response | HttpResponse:
        if not self.customers_allowed and not principal_sees_all(request.user):
            raise PermissionDenied("This dashboard is visible to cluster staff only.")
        try:
            tr = parse_timerange(request.query_params)
        except TimeRangeError as error:
            raise ValidationError(error.errors) from None
        if request.accepted_renderer.format != "csv":
            # JSON: the rendered bytes are what is shared, so a hit does not re-encode them.
            if self.range_independent:
                # A snapshot: one entry serves every range; only the echoed range differs,
                # and it is added to the stored bytes rather than re-encoding the payload.
                build = self.builder(request, tr, **kwargs)
                body = cached_json(
                    request,
                    type(self).__name__,
                    lambda: {k: v for k, v in build().items() if k != "range"},
                    ignore_params=RANGE_PARAMS,
                    **kwargs,
                )
                body = with_key(body, "range", tr.as_json())
            else:
                body = cached_json(
                    request, type(self).__name__, self.builder(request, tr, **kwargs), **kwargs
                )
            return HttpResponse(body, content_type="application/json")
        payload = self.cached_build(request, tr, **kwargs)
        name = request.query_params.get("table", "")
        tables = payload.get("tables", {})
        if name not in tables:
            raise ValidationError(
                {"table": f"name one of: {', '.join(sorted(tables)) or '(none)'}"}
            )
        return table_csv(f"{self.csv_prefix(payload)}-{name}", tables[name])

    def builder(self, request: Request, tr: TimeRange, **kwargs) -> Callable[[], dict]:
        def build() -> dict:
            payload = mark_data_start(self.build(request, tr, **kwargs), tr.start, tr.end)
            payload["range"] = tr.as_json()
            now = datetime.now(tz=UTC)
            payload["updated"] = now.isoformat()
            # The page's "Last updated" line: Django's date format of the reader's language
            # (not the browser's default locale, which wrote US dates on Chinese pages). The
            # cache keeps one payload per language, so this is formatted once per build.
            stamp = timezone.localtime(now)
            payload["updated_display"] = date_format(stamp, "DATETIME_FORMAT")
            return payload

        return build

    def cached_build(self, request: Request, tr: TimeRange, **kwargs) -> dict:
        """The payload, shared briefly by everyone with the same scope (see web.caching)."""
        return cached_payload(
            request, type(self).__name__, self.builder(request, tr, **kwargs), **kwargs
        )

    def csv_prefix(self, payload: dict) -> str:
        return payload.get("cluster") or "dashboard"


@extend_schema_view(get=extend_schema(parameters=[CLUSTER_PARAMETER]))
class ClusterDashboardView(DashboardView):
    """A page about one cluster: ``?cluster=NAME`` (default: the first unified cluster)."""

    def cluster(self, request: Request) -> Cluster:
        cluster = cluster_pick(request.query_params.get("cluster"))
        if cluster is None:
            raise NotFound("unknown cluster (or no cluster yet)")
        return cluster

    def build(self, request: Request, tr: TimeRange, **kwargs) -> dict:
        cluster = self.cluster(request)
        payload = self.cluster_payload(cluster, tr)
        payload["cluster"] = cluster.name
        return payload

    def cluster_payload(self, cluster: Cluster, tr: TimeRange) -> dict:
        raise NotImplementedError


class OverviewDataView(ClusterDashboardView):
    def cluster_payload(self, cluster: Cluster, tr: TimeRange) -> dict:
        return overview_payload(overview(cluster, tr))


class HardwareDataView(ClusterDashboardView):
    range_independent = True

    def cluster_payload(self, cluster: Cluster, tr: TimeRange) -> dict:
        # One reverse() for every rack link (a 10,240-card cluster has hundreds of racks).
        template = reverse("dashboard-rack", args=[987654321])
        card = reverse("dashboard-accelerator", args=[987654321])
        return hardware_payload(
            hardware(cluster),
            lambda pk: template.replace("987654321", str(pk)),
            lambda pk: card.replace("987654321", str(pk)),
        )


class MemoryDataView(ClusterDashboardView):
    def cluster_payload(self, cluster: Cluster, tr: TimeRange) -> dict:
        return memory_payload(memory(cluster, tr))


class NetworkDataView(ClusterDashboardView):
    def cluster_payload(self, cluster: Cluster, tr: TimeRange) -> dict:
        template = reverse("dashboard-rack", args=[987654321])
        return network_payload(
            network(cluster, tr), lambda pk: template.replace("987654321", str(pk))
        )


class RackDataView(DashboardView):
    def build(self, request: Request, tr: TimeRange, pk: int) -> dict:
        rack = get_object_or_404(Rack.objects.select_related("supernode"), pk=pk)
        entity = Entity.objects.filter(kind="rack", rack=rack).first()
        payload = entity_series_payload(
            entity_series(entity, ("rack_utilization_ratio", "rack_power_watts"), tr), rack.name
        )
        payload["tables"]["nodes"] = members_table(rack_detail(rack), cards=False)
        payload["cluster"] = rack.supernode.cluster.name
        return payload


class NodeDataView(DashboardView):
    def build(self, request: Request, tr: TimeRange, pk: int) -> dict:
        node = get_object_or_404(Node.objects.select_related("cluster"), pk=pk)
        curves, source = node_series(node, tr)
        title = (
            node.hostname if source in ("", "twin") else f"{node.hostname} ({source_text(source)})"
        )
        payload = entity_series_payload(curves, title)
        payload["source"] = source
        payload["tables"]["cards"] = members_table(node_detail(node), cards=True)
        payload["cluster"] = node.cluster.name
        return payload


class AcceleratorDataView(DashboardView):
    def build(self, request: Request, tr: TimeRange, pk: int) -> dict:
        card = get_object_or_404(Accelerator.objects.select_related("node__cluster"), pk=pk)
        entity = Entity.objects.filter(kind="accelerator", accelerator=card).first()
        label = f"{card.node.hostname}/{card.index}"
        payload = entity_series_payload(entity_series(entity, CARD_SERIES, tr), label)
        payload["cluster"] = card.node.cluster.name
        return payload


@extend_schema_view(
    get=extend_schema(
        operation_id="dashboards_workloads_list",
        responses=DASHBOARD_RESPONSES,
        parameters=TIME_RANGE_PARAMETERS
        + CSV_PARAMETERS
        + [
            OpenApiParameter("kind", str, enum=list(Workload.Kind.values)),
            OpenApiParameter("state", str, enum=list(STATE_FILTERS), description="Default all."),
            OpenApiParameter("tenant", str, description="Tenant slug."),
            OpenApiParameter("cluster", str, description="Only this cluster's workloads."),
            OpenApiParameter("name", str, description="Part of the name (case-insensitive)."),
            OpenApiParameter("page", int, description="JSON only; the CSV holds every row."),
            OpenApiParameter("page_size", int, description=f"1 to {MAX_PAGE_SIZE}."),
        ],
    )
)
class WorkloadListDataView(DashboardView):
    """Workloads the caller may see (customers: their tenant's only) with key figures and
    state, filtered like the page; JSON is paginated (``pagination``), the CSV is every row.
    An unknown parameter or a bad value is a 400 naming it."""

    customers_allowed = True
    range_independent = True

    def get(self, request: Request, **kwargs) -> Response | HttpResponse:
        form = WorkloadListForm(request.query_params, user=request.user)
        reject_unknown_params(request, [*form.fields, *WORKLOAD_LIST_EXTRA_PARAMS, "page_size"])
        if not form.is_valid():
            raise form_validation_error(form)
        self.query = form.query()
        self.page_size = _page_size(request.query_params.get("page_size"))
        return super().get(request, **kwargs)

    def build(self, request: Request, tr: TimeRange, **kwargs) -> dict:
        listed = workload_list(request.user, self.query)
        payload: dict = {"kpis": [], "figures": {}}
        if request.accepted_renderer.format != "csv":
            page, listed_page = listed.page(request.query_params.get("page"), self.page_size)
            payload["pagination"] = {
                "page": page.number,
                "pages": page.paginator.num_pages,
                "page_size": self.page_size,
                "count": len(listed),
            }
            listed = listed_page
        payload["tables"] = {"workloads": workload_list_table(listed.columns, listed.states)}
        return payload

    def csv_prefix(self, payload: dict) -> str:
        return "workloads"


class WorkloadDetailDataView(DashboardView):
    customers_allowed = True

    def build(self, request: Request, tr: TimeRange, pk: int) -> dict:
        workload = workloads_visible_to(request.user).filter(pk=pk).first()
        if workload is None:
            raise NotFound("no such workload (or not visible to you)")
        payload = workload_detail_payload(workload_detail(workload, tr))
        payload["workload"] = {
            "id": workload.pk,
            "name": workload.name,
            "tenant": workload.tenant.slug,
            "kind": workload.kind,
            "cluster": workload.cluster.name,
            "slo_ttft_ms": workload.slo_ttft_ms,
            "slo_tpot_ms": workload.slo_tpot_ms,
            "slo_p99_ms": workload.slo_p99_ms,
        }
        return payload

    def csv_prefix(self, payload: dict) -> str:
        return f"workload-{payload['workload']['name']}"
