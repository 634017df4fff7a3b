"""Pages of a cluster whose PromQL server is down say so (503) instead of failing with a 500."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from telemetry.promql.client import DataSourceUnavailable


class DataSourceUnavailableMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception):
        if not isinstance(exception, DataSourceUnavailable):
            return None
        context = {"cluster": exception.cluster, "reason": exception.reason}
        return render(request, "telemetry/data_source_unavailable.html", context, status=503)
