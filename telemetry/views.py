"""The operator page for scrape mode: each exporter target's state, last success and error."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.access import staff_page
from telemetry.selectors.exporters import exporter_target_rows


@staff_page
def exporter_list(request: HttpRequest) -> HttpResponse:
    """Staff only: target URLs and errors describe internal infrastructure."""
    return render(request, "monitoring/exporters.html", {"rows": exporter_target_rows()})
