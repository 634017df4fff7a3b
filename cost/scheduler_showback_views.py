"""The scheduler showback page (``/scheduler/showback/``, linked from the scheduler page), its
CSV downloads and ``/api/v1/scheduler/showback/``: thin views over
:func:`cost.scheduler_showback.scheduler_showback`, one month at a time."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.selectors.scoping import principal_sees_all
from cluster_portal.web.csv import csv_response
from cluster_portal.web.filters import reject_unknown_params, unknown_params
from cost.scheduler_showback import ReconciledDay, SchedulerShowback, scheduler_showback
from scheduling.selectors.showback import AllocationRow, PeriodError, month_period, this_month

PAGE_PARAMS = ("month", "download")
DOWNLOADS = ("allocation", "reconciliation")
ALLOCATION_COLUMNS = ["day", "cluster", "tenant", "partition", "node_type", "card_hours", "jobs"]
RECONCILIATION_COLUMNS = ["day", "cluster", "tenant", "allocated_card_hours",
                          "measured_card_hours", "difference_card_hours", "measured_basis",
                          "estimated_card_hours", "note"]  # fmt: skip


def _allocation_json(row: AllocationRow) -> dict:
    return {
        "day": row.day.isoformat() if row.day else None,
        "cluster": row.cluster, "tenant": row.tenant, "partition": row.partition,
        "node_type": row.node_type, "card_hours": row.card_hours, "jobs": row.jobs,
    }  # fmt: skip


def _reconciled_json(row: ReconciledDay) -> dict:
    return {
        "day": row.day.isoformat(), "cluster": row.cluster, "tenant": row.tenant,
        "allocated_card_hours": row.allocated_card_hours,
        "measured_card_hours": row.measured_card_hours,
        "difference_card_hours": row.difference_card_hours,
        "measured_basis": list(row.bases),
        "estimated_card_hours": row.estimated_card_seconds / 3600.0,
        "note": row.note,
    }  # fmt: skip


def _csv(month: str, which: str, found: SchedulerShowback) -> HttpResponse:
    if which == "allocation":
        rows = [[r.day, r.cluster, r.tenant, r.partition, r.node_type, r.card_hours, r.jobs]
                for r in found.days]  # fmt: skip
        return csv_response(filename=f"scheduler-showback-{month}", columns=ALLOCATION_COLUMNS,
                            rows=rows)  # fmt: skip
    rows = [[r.day, r.cluster, r.tenant, r.allocated_card_hours, r.measured_card_hours,
             r.difference_card_hours, " ".join(r.bases), r.estimated_card_seconds / 3600.0,
             r.note] for r in found.reconciliation]  # fmt: skip
    return csv_response(filename=f"scheduler-reconciliation-{month}",
                        columns=RECONCILIATION_COLUMNS, rows=rows)  # fmt: skip


@login_required
def scheduler_showback_page(request: HttpRequest) -> HttpResponse:
    """One month's card-hours from the scheduler's allocations, by tenant × partition × node
    type, and each tenant-day against the ledger's measured card-hours; ``?download=`` gives
    either table as CSV. A customer sees its own tenant only."""
    errors = {key: _("unknown parameter") for key in unknown_params(request.GET, PAGE_PARAMS)}
    month = (request.GET.get("month") or this_month()).strip()
    which = request.GET.get("download") or ""
    if which and which not in DOWNLOADS:
        errors["download"] = _("download must be one of: %(choices)s") % {
            "choices": ", ".join(DOWNLOADS)
        }
    try:
        start, end = month_period(month)
    except PeriodError as exc:
        errors["month"] = str(exc)
    if errors:
        return render(request, "bad_filter.html", {"errors": errors}, status=400)
    found = scheduler_showback(request.user, start, end)
    if which:
        return _csv(month, which, found)
    context = {
        "month": month,
        "found": found,
        "staff": principal_sees_all(request.user),
        "allocation_csv": urlencode({"month": month, "download": "allocation"}),
        "reconciliation_csv": urlencode({"month": month, "download": "reconciliation"}),
        "allocated_total": sum(r.card_hours for r in found.totals),
    }
    return render(request, "scheduling/showback.html", context)


class SchedulerShowbackView(APIView):
    """``GET ?month=YYYY-MM`` (default: this month): card-hours the scheduler allocated per
    day and per month by cluster × tenant × partition × node type, and per tenant-day the
    ledger's measured card-hours with the difference (``measured_card_hours`` null: no
    measured data). Customers and tenant tokens get their own tenant only."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    @extend_schema(
        parameters=[
            OpenApiParameter("month", OpenApiTypes.STR, description="YYYY-MM (UTC month).")
        ],
        responses={200: OpenApiTypes.OBJECT},
        operation_id="scheduler_showback",
    )
    def get(self, request: Request) -> Response:
        reject_unknown_params(request, ("month",))
        month = (request.query_params.get("month") or this_month()).strip()
        try:
            start, end = month_period(month)
        except PeriodError as exc:
            raise ValidationError({"month": str(exc)}) from None
        found = scheduler_showback(request.user, start, end)
        return Response(
            {
                "month": month,
                "start": start.isoformat(),
                "end": end.isoformat(),
                "days": [_allocation_json(r) for r in found.days],
                "month_totals": [_allocation_json(r) for r in found.totals],
                "reconciliation": [_reconciled_json(r) for r in found.reconciliation],
            }
        )
