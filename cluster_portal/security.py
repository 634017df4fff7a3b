"""Small security helpers: the client address for login throttling and the CSP report sink."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

logger = logging.getLogger("cluster_portal.csp")

# A browser's report is a few hundred bytes (a Reporting API batch a few of them); anything
# much larger is not a report. Checked on the declared length before the body is read.
MAX_REPORT_BYTES = 8 * 1024
# At most this many directive names are counted in the one line a request logs.
MAX_DIRECTIVES_LOGGED = 10
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


def _throttled(request: HttpRequest) -> bool:
    """Fixed window per client address (``CSP_REPORT_RATE``, e.g. ``"30/min"``), in the shared
    cache. A cache that is down lets reports through: they are only log lines, one each."""
    rate = getattr(settings, "CSP_REPORT_RATE", None)
    if not rate:
        return False
    from cluster_portal.web.throttling import CACHE_ERRORS, parse_rate

    allowed, period = parse_rate(rate)
    window = int(time.time() // period)
    key = f"throttle:csp-report:{client_ip(request) or '-'}:{window}"
    try:
        if cache.add(key, 1, timeout=period + 1):
            return False
        return cache.incr(key) > allowed
    except CACHE_ERRORS:
        return False
    except ValueError:  # the key expired between add and incr
        return False


@csrf_exempt
@require_POST
def csp_report(request: HttpRequest) -> HttpResponse:
    """Log the Content-Security-Policy violations a browser reports in ONE line; store nothing.

    Anonymous and CSRF-exempt because browsers send reports without cookies or tokens, so it
    is bounded instead: at most ``MAX_REPORT_BYTES`` per request (a larger declared length is
    refused before reading), ``CSP_REPORT_RATE`` requests per client address (429 beyond), and
    one log line per request however many reports a batch holds (the first report's fields,
    the count and the directives seen). The answer is an empty 204; malformed bodies get 400.
    """
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if not declared.isdigit() or int(declared) > MAX_REPORT_BYTES:
        return HttpResponse(status=400)
    if _throttled(request):
        return HttpResponse(status=429, headers={"Retry-After": "60"})
    body = request.read(MAX_REPORT_BYTES + 1)
    if len(body) > MAX_REPORT_BYTES:
        return HttpResponse(status=400)
    try:
        payload = json.loads(body or b"null")
    except ValueError:
        return HttpResponse(status=400)
    reports = _reports(payload)
    if not reports:
        return HttpResponse(status=400)
    details = {key: str(reports[0][key])[:300] for key in REPORT_FIELDS if key in reports[0]}
    if len(reports) > 1:
        directives = Counter(
            str(r.get("effectiveDirective") or r.get("violated-directive") or "?")[:60]
            for r in reports
        )
        details["reports"] = len(reports)
        details["directives"] = dict(directives.most_common(MAX_DIRECTIVES_LOGGED))
    logger.warning("CSP violation: %s", json.dumps(details, sort_keys=True))
    return HttpResponse(status=204)
