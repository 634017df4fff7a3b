"""The operator page for scrape mode: each exporter target's state, last success and error."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.access import staff_page
from telemetry.models import PromQLDataSource, RemoteWriteStatus
from telemetry.read.local.exporters import exporter_target_rows, ingest_refusal_summary


@staff_page
def exporter_list(request: HttpRequest) -> HttpResponse:
    """Staff only: target URLs and errors describe internal infrastructure."""
    context = {
        "rows": exporter_target_rows(),
        "remote_write": RemoteWriteStatus.objects.select_related("cluster"),
        "promql_sources": PromQLDataSource.objects.select_related("cluster"),
        "refusals": ingest_refusal_summary(),
    }
    return render(request, "telemetry/exporters.html", context)
