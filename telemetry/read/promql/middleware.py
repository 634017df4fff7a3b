"""Pages of a cluster whose PromQL server is down or slow say so (503) instead of failing.

Every request runs inside a PromQL read budget (``telemetry.read.promql.guard``): all of its reads
together end well before gunicorn's worker timeout, and a slow source cannot take every
thread. The page names the cluster and what went wrong in a few words; the source's address
and what it answered are for signed-in staff only.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from cluster_portal.web.errors import sees_internal_detail
from telemetry.read.promql.client import DataSourceUnavailable
from telemetry.read.promql.guard import web_request_budget


class DataSourceUnavailableMiddleware:
    """Runs each request within the read budget; renders ``DataSourceUnavailable`` as 503."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with web_request_budget():
            return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception):
        if not isinstance(exception, DataSourceUnavailable):
            return None
        context = {
            "cluster": exception.cluster,
            "reason": exception.reason,
            "detail": exception.staff_detail if sees_internal_detail(request) else "",
        }
        return render(request, "telemetry/data_source_unavailable.html", context, status=503)
