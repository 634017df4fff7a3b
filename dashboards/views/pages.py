"""Server-rendered pages of the foundation: home (per role) and the process status page."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.access import staff_page
from accounts.models import Tenant
from cluster_portal.web.readiness import broker_description, readiness
from dashboards.selectors.customer import customer_summary
from dashboards.selectors.workload_list import WorkloadListQuery, workload_list
from dashboards.selectors.workloads import workload_rows_of
from telemetry.read import any_alive, heartbeat_statuses, recent_data_gaps

HOME_WORKLOADS = 10


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if request.user.sees_all_tenants:
        statuses = heartbeat_statuses()
        context = {
            "tenants": Tenant.objects.all(),
            "worker_alive": any_alive(statuses, "worker"),
            "beat_alive": any_alive(statuses, "beat"),
        }
        return render(request, "dashboards/home_staff.html", context)
    tenant = request.user.tenant
    # The customer's home leads with what they pay and how their migration stands, then their
    # active workloads (a page of them: a tenant with thousands of finished jobs made this page
    # 12,000 px tall); the full list is /workloads/.
    active = workload_list(request.user, WorkloadListQuery(state="active"))
    _page, shown = active.page(1, HOME_WORKLOADS)
    context = {
        "tenant": tenant,
        "members": tenant.users.order_by("username") if tenant else [],
        "workloads": workload_rows_of(shown.columns),
        "workloads_active": len(active),
        "summary": customer_summary(request.user),
    }
    return render(request, "dashboards/home_customer.html", context)


@staff_page
def status(request: HttpRequest) -> HttpResponse:
    statuses = heartbeat_statuses()
    checks = readiness()
    context = {
        "statuses": statuses,
        "checks": checks,
        "broker_down": any(c.name == "broker" and not c.ok for c in checks),
        "data_gaps": recent_data_gaps(),
        "broker": broker_description(),
        "database": f"{connection.vendor} ({connection.settings_dict['NAME']})",
        "stale_after": settings.HEARTBEAT_STALE_AFTER_SECONDS,
        "worker_alive": any_alive(statuses, "worker"),
        "beat_alive": any_alive(statuses, "beat"),
    }
    template = (
        "dashboards/_status_body.html" if request.GET.get("partial") else "dashboards/status.html"
    )
    return render(request, template, context)
