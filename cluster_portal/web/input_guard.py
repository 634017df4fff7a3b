"""Refuse NUL characters in the query string before any view sees them.

PostgreSQL cannot store or compare a string holding NUL (psycopg raises, which would be a
500), and no legitimate parameter contains one. Any request whose decoded query parameters
hold a NUL answers 400 in the one JSON error body, naming the parameter.
"""

from __future__ import annotations

from django.http import JsonResponse
from django.utils.translation import gettext as _


class RejectNulMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        if "%00" in request.META.get("QUERY_STRING", "") or "\x00" in request.path:
            for name, values in request.GET.lists():
                if "\x00" in name or any("\x00" in v for v in values):
                    return _refuse(name.replace("\x00", ""))
            if "\x00" in request.path:
                return _refuse("path")
        return self.get_response(request)


def _refuse(name: str) -> JsonResponse:
    message = _("%(name)s contains a NUL character.") % {"name": name}
    return JsonResponse(
        {"detail": message, "code": "invalid", "errors": {name: [message]}}, status=400
    )
