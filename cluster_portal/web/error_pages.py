"""Project-wide 404/500 handlers: API clients get the API's JSON error body, people get pages.

URL patterns that do not match (``/api/v1/plans/abc/``) never reach DRF, so without this an API
client would receive Django's HTML error page.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext as _
from django.views import defaults


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _is_api(request):
        return JsonResponse(
            {"detail": _("No such URL in the API; see /api/docs/."), "code": "not_found"},
            status=404,
        )
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return JsonResponse(
            {"detail": _("Internal server error; it has been logged."), "code": "server_error"},
            status=500,
        )
    return defaults.server_error(request)
