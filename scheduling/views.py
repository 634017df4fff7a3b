"""The scheduler page: where jobs come from (staff) and the jobs the requester may see."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.access import operator_page
from accounts.selectors.scoping import principal_sees_all
from cluster_portal.web.filters import unknown_params
from scheduling.errors import SchedulerSyncFailed
from scheduling.models import SchedulerSource
from scheduling.selectors import jobs_visible_to, sources_with_status
from scheduling.selectors.idle import idle_allocations
from scheduling.selectors.queues import WAIT_WINDOW, pending_by_partition, wait_percentiles
from scheduling.selectors.quotas import quotas_beside_use
from scheduling.services.sync import scheduler_source_sync

PAGE_SIZE = 100
LIST_PARAMS = ("cluster", "state", "page")


@login_required
def scheduler_page(request: HttpRequest) -> HttpResponse:
    """Scheduler sources with their last poll (staff), the queues (pending jobs per partition,
    wait percentiles) and jobs, filterable by cluster and state; a customer sees its tenant's
    jobs only and no source."""
    unknown = unknown_params(request.GET, LIST_PARAMS)
    if unknown:
        errors = {key: _("unknown parameter") for key in unknown}
        return render(request, "bad_filter.html", {"errors": errors}, status=400)
    cluster = (request.GET.get("cluster") or "").strip()[:100]
    state = (request.GET.get("state") or "").strip().upper()[:40]
    visible = jobs_visible_to(request.user)
    jobs = jobs_visible_to(request.user, cluster=cluster, state=state)
    filters = {key: value for key, value in (("cluster", cluster), ("state", state)) if value}
    staff = principal_sees_all(request.user)
    waits, waits_by_hour = wait_percentiles(request.user, cluster=cluster)
    context = {
        "sources": list(sources_with_status()) if staff else [],
        "staff": staff,
        "can_operate": request.user.has_perm("monitoring.operate_cluster"),
        "page": Paginator(jobs, PAGE_SIZE).get_page(request.GET.get("page")),
        "cluster": cluster,
        "state": state,
        "cluster_choices": sorted(set(visible.values_list("source__cluster__name", flat=True))),
        "state_choices": sorted(set(visible.values_list("state", flat=True))),
        "filter_query": urlencode(filters),
        "sync_seconds": int(settings.SCHEDULER_SYNC_SECONDS),
        "pending": pending_by_partition(request.user, cluster=cluster),
        "quotas": quotas_beside_use(request.user, cluster=cluster),
        "waits": waits,
        "waits_by_hour": waits_by_hour,
        "wait_days": WAIT_WINDOW.days,
        "idle": idle_allocations(visible),
    }
    return render(request, "scheduling/scheduler.html", context)


@operator_page
@require_POST
def scheduler_source_sync_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Poll one source now (the API's ``/sync/``, the same service); the outcome as a message."""
    source = get_object_or_404(SchedulerSource.objects.select_related("cluster"), pk=pk)
    try:
        result = scheduler_source_sync(source=source)
    except SchedulerSyncFailed as exc:
        messages.error(
            request,
            _("%(cluster)s: the scheduler could not be read: %(reason)s")
            % {"cluster": source.cluster.name, "reason": exc.detail},
        )
    else:
        messages.success(
            request,
            _(
                "%(cluster)s polled (API %(version)s): %(jobs)s changed jobs, %(nodes)d nodes, "
                "%(partitions)d partitions."
            )
            % {
                "cluster": source.cluster.name,
                "version": result.api_version,
                "jobs": _("no") if result.jobs is None else result.jobs,
                "nodes": result.nodes,
                "partitions": result.partitions,
            },
        )
    return redirect("scheduler")
