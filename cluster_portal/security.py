"""Small security helpers: the client address for login throttling and the CSP report sink."""

from __future__ import annotations

import json
import logging

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

logger = logging.getLogger("cluster_portal.csp")

# A browser's report is a few hundred bytes; anything much larger is not a report.
MAX_REPORT_BYTES = 16 * 1024
# The fields worth a log line, from both report formats (report-uri and the Reporting API).
REPORT_FIELDS = (
    "document-uri",
    "documentURL",
    "violated-directive",
    "effectiveDirective",
    "effective-directive",
    "blocked-uri",
    "blockedURL",
    "source-file",
    "sourceFile",
    "line-number",
    "lineNumber",
    "script-sample",
    "sample",
)


def client_ip(request: HttpRequest) -> str | None:
    """The client's address for django-axes.

    ``REMOTE_ADDR`` unless ``TRUSTED_PROXY_COUNT`` reverse proxies sit in front, each appending
    the address it saw to ``X-Forwarded-For``; then the entry the outermost trusted proxy added.
    Entries further left are written by the client and never trusted, so a forged header
    cannot dodge a lockout.
    """
    remote = request.META.get("REMOTE_ADDR")
    proxies = getattr(settings, "TRUSTED_PROXY_COUNT", 0)
    if proxies <= 0:
        return remote
    chain = [
        part.strip()
        for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
        if part.strip()
    ]
    if len(chain) < proxies:
        return remote
    return chain[-proxies]


def lockout_response(
    request: HttpRequest, original_response=None, credentials=None
) -> HttpResponse:
    """django-axes' answer to a locked-out login: HTTP 429 and a page explaining the cool-off."""
    minutes = max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    return render(
        request,
        "registration/locked_out.html",
        {"failure_limit": settings.AXES_FAILURE_LIMIT, "cooloff_minutes": minutes},
        status=429,
    )


def _reports(payload) -> list[dict]:
    if isinstance(payload, dict) and isinstance(payload.get("csp-report"), dict):
        return [payload["csp-report"]]  # report-uri: {"csp-report": {...}}
    if isinstance(payload, list):  # Reporting API: [{"type": "csp-violation", "body": {...}}]
        return [
            item["body"]
            for item in payload
            if isinstance(item, dict) and isinstance(item.get("body"), dict)
        ]
    return []


@csrf_exempt
@require_POST
def csp_report(request: HttpRequest) -> HttpResponse:
    """Log each Content-Security-Policy violation a browser reports; store nothing.

    Anonymous and CSRF-exempt because browsers send reports without cookies or tokens. The
    answer is always an empty 204 so a flood of reports costs one log line each and nothing
    else; oversized or malformed bodies are dropped with 400.
    """
    if len(request.body) > MAX_REPORT_BYTES:
        return HttpResponse(status=400)
    try:
        payload = json.loads(request.body or b"null")
    except ValueError:
        return HttpResponse(status=400)
    reports = _reports(payload)
    if not reports:
        return HttpResponse(status=400)
    for report in reports:
        details = {key: str(report[key])[:300] for key in REPORT_FIELDS if key in report}
        logger.warning("CSP violation: %s", json.dumps(details, sort_keys=True))
    return HttpResponse(status=204)
