"""A request whose database connection is lost answers a retryable 503, not a 500.

PostgreSQL restarting, a failover, a connection killed by a pooler or an idle timeout: the
view's query raises ``OperationalError`` (or ``InterfaceError`` on a connection already closed)
and, without this, the client got "Internal server error" — a 500 says "do not retry", the
opposite of what is true. API clients get the one JSON error body with ``Retry-After``; people
get a short page that needs nothing from the database (no session, no menu). Django closes the
broken connection when the request ends, so the next request connects afresh.
"""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils.translation import gettext as _

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5


class DatabaseUnavailableMiddleware:
    """Turns a lost database connection inside a view into a 503 with ``Retry-After``."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception):
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        logger.warning(
            "database unavailable during %s %s: %s", request.method, request.path, exception
        )
        for connection in connections.all(initialized_only=True):
            connection.close_if_unusable_or_obsolete()
        message = _("The database is unavailable for a moment; retry shortly.")
        if request.path.startswith("/api/") or request.path == "/metrics":
            response: HttpResponse = JsonResponse(
                {"detail": message, "code": "database_unavailable"}, status=503
            )
        else:
            html = render_to_string("503_database.html", {"message": message})
            response = HttpResponse(html, status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
