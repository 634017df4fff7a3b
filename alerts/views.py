"""The alert triage page, its CSV export, and the operator's acknowledge / resolve buttons."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.access import operator_page, staff_page
from accounts.models import Tenant
from alerts.models import Alert
from alerts.selectors import (
    SEVERITY_FILTERS,
    STATE_FILTERS,
    alerts_for_triage,
    alerts_visible_to,
)
from alerts.services import AlertTransitionError, alert_acknowledge, alert_resolve
from cluster_portal.web.csv import csv_writer
from cluster_portal.web.filters import unknown_params
from inventory.models import Cluster

PAGE_SIZE = 100

# CSV headers are stable column identifiers for spreadsheets and scripts, so they are not
# translated (a script reading "severity" must not break when the UI language changes).
CSV_COLUMNS = (
    "id",
    "severity",
    "state",
    "rule",
    "title",
    "cluster",
    "entity_kind",
    "entity",
    "tenant",
    "value",
    "comparator",
    "threshold",
    "first_seen",
    "last_seen",
    "acknowledged_by",
    "resolved_at",
    "message",
)


# What the triage page's URL may carry; anything else is a 400 page naming it.
LIST_PARAMS = ("state", "severity", "cluster", "tenant", "name", "page", "format")


def _number(value: float) -> str:
    return f"{value:.4g}"


def _choice(value: str | None, allowed: tuple[str, ...]) -> str:
    # Unknown filter values show everything rather than an error page: the form offers only
    # valid choices, so an unknown one is a stale or hand-edited link.
    return value if value in allowed else ""


@staff_page
def alert_list(request: HttpRequest) -> HttpResponse:
    """Alerts, open ones first; ``?state=&severity=`` filter, ``?format=csv`` exports them."""
    unknown = unknown_params(request.GET, LIST_PARAMS)
    if unknown:
        errors = {key: _("unknown parameter") for key in unknown}
        return render(request, "bad_filter.html", {"errors": errors}, status=400)
    state = _choice(request.GET.get("state"), STATE_FILTERS)
    severity = _choice(request.GET.get("severity"), SEVERITY_FILTERS)
    clusters = list(Cluster.objects.order_by("name").values_list("name", flat=True))
    tenants = list(Tenant.objects.order_by("slug").values_list("slug", "name"))
    cluster = _choice(request.GET.get("cluster"), tuple(clusters))
    tenant = _choice(request.GET.get("tenant"), tuple(slug for slug, _name in tenants))
    name = (request.GET.get("name") or "").strip()[:120]
    alerts = alerts_for_triage(
        alerts_visible_to(request.user), state=state or None, severity=severity or None
    )
    if cluster:
        alerts = alerts.filter(entity__cluster__name=cluster)
    if tenant:
        alerts = alerts.filter(tenant__slug=tenant)
    if name:
        alerts = alerts.filter(Q(rule__title__icontains=name) | Q(entity__key__icontains=name))
    if request.GET.get("format") == "csv":
        return _csv_response(alerts)
    chosen = (
        ("state", state),
        ("severity", severity),
        ("cluster", cluster),
        ("tenant", tenant),
        ("name", name),
    )
    filters = {key: value for key, value in chosen if value}
    page = Paginator(alerts, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "rows": [(a, _number(a.value), _number(a.rule.threshold)) for a in page],
        "state": state,
        "severity": severity,
        "cluster": cluster,
        "tenant": tenant,
        "name": name,
        "cluster_choices": clusters,
        "tenant_choices": tenants,
        "state_choices": [("open", _("open (firing or acknowledged)")), *Alert.State.choices],
        "severity_choices": Alert._meta.get_field("severity").choices,
        "filter_query": urlencode(filters),
        "csv_query": urlencode({**filters, "format": "csv"}),
        "can_operate": request.user.has_perm("monitoring.operate_cluster"),
    }
    return render(request, "alerts/alerts.html", context)


def _csv_response(alerts: QuerySet[Alert]) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="alerts.csv"'
    writer = csv_writer(response)
    writer.writerow(CSV_COLUMNS)
    for alert in alerts.iterator(chunk_size=2000):
        writer.writerow(
            [
                alert.pk,
                alert.severity,
                alert.state,
                alert.rule.name,
                alert.rule.title,
                alert.entity.cluster.name,
                alert.entity.kind,
                alert.entity.key,
                alert.tenant.slug if alert.tenant else "",
                alert.value,
                alert.rule.get_comparator_display(),
                alert.rule.threshold,
                alert.first_seen.isoformat(),
                alert.last_seen.isoformat(),
                alert.acknowledged_by.username if alert.acknowledged_by else "",
                alert.resolved_at.isoformat() if alert.resolved_at else "",
                alert.message,
            ]
        )
    return response


def _back(request: HttpRequest) -> str:
    """Where to return after an action: the filtered list the button was on."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("alerts")


@operator_page
@require_POST
def alert_acknowledge_view(request: HttpRequest, pk: int) -> HttpResponse:
    alert = get_object_or_404(Alert, pk=pk)
    try:
        alert_acknowledge(alert=alert, user=request.user)
    except AlertTransitionError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, _("Alert %(id)s acknowledged.") % {"id": alert.pk})
    return redirect(_back(request))


@operator_page
@require_POST
def alert_resolve_view(request: HttpRequest, pk: int) -> HttpResponse:
    alert = get_object_or_404(Alert, pk=pk)
    try:
        alert_resolve(alert=alert, user=request.user)
    except AlertTransitionError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, _("Alert %(id)s resolved.") % {"id": alert.pk})
    return redirect(_back(request))
