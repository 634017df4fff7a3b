"""Dashboard pages: server-rendered frames whose charts and tiles ``static/js/dashboard.js``
fills from the matching ``/api/v1/dashboards/...`` endpoint (live refresh every 15 s)."""

from __future__ import annotations

from dataclasses import asdict
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext as _

from accounts.access import staff_page
from cluster_portal.web.filters import unknown_params
from cluster_portal.web.timerange import PRESET_LABELS, TimeRangeError, parse_timerange
from cluster_portal.web.units import format_value, unit_for_metric
from dashboards.forms import WORKLOAD_LIST_EXTRA_PARAMS, WorkloadListForm
from dashboards.payloads.card_swimlane import card_swimlane_figure
from dashboards.payloads.workloads import workload_list_table
from dashboards.selectors.card_holders import card_holders
from dashboards.selectors.common import cluster_pick, clusters
from dashboards.selectors.day_night import scheduler_kind
from dashboards.selectors.hardware import node_detail, rack_detail
from dashboards.selectors.workload_list import STATE_LABELS, workload_list
from dashboards.selectors.workloads import workloads_visible_to
from dashboards.views.attribution import attribution_context
from dashboards.views.fabric import fabric_context
from dashboards.views.serving import serving_bindings_context
from inventory.models import Accelerator, Node, Rack, Workload


def display_cell(column: str, value) -> str:
    """A list cell as shown on the page (the CSV carries the raw value)."""
    if value is None:
        return "—"
    if column == "kind":
        return str(Workload.Kind(value).label)
    if column == "criticality":
        return str(Workload.Criticality(value).label)
    if column == "state":
        return str(STATE_LABELS.get(value, value))
    if isinstance(value, float | int) and not isinstance(value, bool):
        # By the unit the column's name declares: 64.0 cards → "64", 0.0421 s → "42.1 ms".
        return format_value(value, unit_for_metric(column))
    return str(value)


def _frame(request: HttpRequest, template: str, data_url: str, **context) -> HttpResponse:
    """Render a dashboard page with the range picker; a bad range is a 400 page."""
    try:
        tr = parse_timerange(request.GET)
    except TimeRangeError as error:
        return render(request, "dashboards/bad_range.html", {"errors": error.errors}, status=400)
    keep = {k: v for k, v in request.GET.items() if k in ("cluster", "kind", "supernode")}
    presets = [
        (key, label, "?" + urlencode({**keep, "range": key}), key == tr.preset)
        for key, label in PRESET_LABELS.items()
    ]
    context.update(
        data_url=data_url,
        presets=presets,
        timerange=tr,
        custom=tr.preset == "custom",
        keep=keep,
    )
    return render(request, template, context)


def _cluster_page(request: HttpRequest, template: str, api_name: str, **context) -> HttpResponse:
    cluster = cluster_pick(request.GET.get("cluster"))
    if request.GET.get("cluster") and cluster is None:
        raise Http404("unknown cluster")
    extra = context.pop("extra", None)
    if extra is not None and cluster is not None:
        # A page's own reads of the picked cluster; a response (a refusal) is returned as is.
        more = extra(cluster)
        if isinstance(more, HttpResponse):
            return more
        context.update(more)
    return _frame(
        request,
        template,
        reverse(f"api:{api_name}"),
        cluster=cluster,
        clusters=clusters(),
        **context,
    )


@staff_page
def overview_page(request: HttpRequest) -> HttpResponse:
    def extra(cluster) -> dict:
        # A scheduler-fed cluster gets the day/night curve from the scheduler's allocation.
        return {
            "scheduler_kind": scheduler_kind(cluster),
            "inference_words": ", ".join(settings.SCHEDULER_INFERENCE_PARTITIONS),
        }

    return _cluster_page(request, "dashboards/overview.html", "dashboard-overview", extra=extra)


@staff_page
def hardware_page(request: HttpRequest) -> HttpResponse:
    return _cluster_page(request, "dashboards/hardware.html", "dashboard-hardware")


@staff_page
def memory_page(request: HttpRequest) -> HttpResponse:
    return _cluster_page(request, "dashboards/memory.html", "dashboard-memory")


@staff_page
def network_page(request: HttpRequest) -> HttpResponse:
    """Operators' network page; its fabric graph is drawn for ``?supernode=<name>``."""
    return _cluster_page(
        request,
        "dashboards/network.html",
        "dashboard-network",
        extra=lambda cluster: fabric_context(request, cluster),
    )


@staff_page
def rack_page(request: HttpRequest, pk: int) -> HttpResponse:
    rack = get_object_or_404(Rack.objects.select_related("supernode__cluster"), pk=pk)
    return _frame(
        request,
        "dashboards/rack.html",
        reverse("api:dashboard-rack", args=[pk]),
        rack=rack,
        rows=rack_detail(rack),
    )


@staff_page
def node_page(request: HttpRequest, pk: int) -> HttpResponse:
    node = get_object_or_404(Node.objects.select_related("cluster", "rack__supernode"), pk=pk)
    return _frame(
        request,
        "dashboards/node.html",
        reverse("api:dashboard-node", args=[pk]),
        node=node,
        rows=node_detail(node),
    )


@staff_page
def accelerator_page(request: HttpRequest, pk: int) -> HttpResponse:
    card = get_object_or_404(
        Accelerator.objects.select_related("node__cluster", "node__rack__supernode"), pk=pk
    )
    holders = card_holders(card, request.user)
    return _frame(
        request,
        "dashboards/accelerator.html",
        reverse("api:dashboard-accelerator", args=[pk]),
        card=card,
        holders=holders,
        swimlane_figure=card_swimlane_figure(holders) if holders.holdings else None,
    )


@login_required
def workload_list_page(request: HttpRequest) -> HttpResponse:
    """Staff see every workload; customers only their tenant's (same selector as the API).

    Filtered by kind, state (default: active, i.e. not finished), tenant, cluster and name,
    :data:`PAGE_SIZE` rows a page; an unknown parameter or a bad value is a 400 page naming it.
    """
    form = WorkloadListForm(request.GET, user=request.user, default_state="active")
    unknown = unknown_params(request.GET, [*form.fields, *WORKLOAD_LIST_EXTRA_PARAMS])
    if unknown or not form.is_valid():
        errors = {key: _("unknown parameter") for key in unknown}
        if not unknown:
            errors = {field: " ".join(messages) for field, messages in form.errors.items()}
        return render(request, "bad_filter.html", {"errors": errors}, status=400)
    query = form.query()
    listed = workload_list(request.user, query)
    page, rows = listed.page(request.GET.get("page"))
    table = workload_list_table(rows.columns, rows.states)
    filters = {k: v for k, v in asdict(query).items() if v and not (k == "state" and v == "active")}
    return _frame(
        request,
        "dashboards/workloads.html",
        reverse("api:dashboard-workloads"),
        table=table,
        display_rows=[
            (row[0], [display_cell(c, v) for c, v in zip(table["columns"], row, strict=True)])
            for row in table["rows"]
        ],
        form=form,
        page=page,
        matching=len(listed),
        page_query=urlencode(filters),
        # The CSV holds every matching row (all pages), with the same filters.
        csv_query=urlencode({**asdict(query), "format": "csv", "table": "workloads"}),
    )


@login_required
def workload_detail_page(request: HttpRequest, pk: int) -> HttpResponse:
    # Another tenant's workload is not in the customer's queryset: 404, not 403.
    workload = workloads_visible_to(request.user).filter(pk=pk).first()
    if workload is None:
        raise Http404("no such workload")
    return _frame(
        request,
        "dashboards/workload_detail.html",
        reverse("api:dashboard-workload", args=[pk]),
        workload=workload,
        **attribution_context(request, workload),
        **serving_bindings_context(request, workload),
    )
