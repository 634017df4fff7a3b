"""API errors as RFC 9457 problem details (``application/problem+json``).

Every error the API answers already has one body, ``{detail, code[, errors, field, row]}``
(:mod:`cluster_portal.web.errors`), whoever produced it: DRF's exception handler, a view's own
409, the NUL guard, the database-unavailable 503, the API 404/500 handlers. This middleware adds
the members RFC 9457 defines — ``type`` (``about:blank``: the HTTP status says what kind of
problem it is, and ``code`` says which one, as an extension member), ``title`` (the status'
phrase, as the RFC asks for ``about:blank``), ``status`` and ``instance`` (the request path) —
and answers with the problem media type. Doing it once, on the way out, means no error path can
forget it. Pages keep their HTML; only JSON error bodies under ``/api/`` are touched.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from http import HTTPStatus

from django.http import HttpRequest, HttpResponse

PROBLEM_CONTENT_TYPE = "application/problem+json"


def problem_members(status: int, instance: str) -> dict:
    """The RFC 9457 members the portal sets on every error body."""
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    return {"type": "about:blank", "title": title, "status": status, "instance": instance}


class ProblemDetailsMiddleware:
    """Turns every JSON error answer under ``/api/`` into a problem details object."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code < 400
            or not request.path.startswith("/api/")
            or getattr(response, "streaming", False)
            or not response.get("Content-Type", "").startswith("application/json")
        ):
            return response
        try:
            body = json.loads(response.content)
        except ValueError:
            return response
        if not isinstance(body, dict):
            return response
        # The body's own members win where they overlap (none do today): the RFC's members
        # come first so a reader sees what kind of problem before its detail.
        problem = {**problem_members(response.status_code, request.path), **body}
        response.content = json.dumps(problem, ensure_ascii=False).encode()
        response["Content-Type"] = PROBLEM_CONTENT_TYPE
        if response.has_header("Content-Length"):
            response["Content-Length"] = str(len(response.content))
        return response
