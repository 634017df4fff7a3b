"""Error answers for people and for API clients.

* Project-wide 404/500 handlers: API clients get the API's JSON error body, people get pages.
  URL patterns that do not match (``/api/v1/plans/abc/``) never reach DRF, so without this an
  API client would receive Django's HTML error page.
* :class:`FriendlyNotFoundMiddleware`: with ``DEBUG`` on (the demo runs so), Django answers a
  404 with its technical page — the view that raised it and every URL pattern of the project —
  and bypasses ``handler404``. That page is for the people who run the portal; everyone else
  (customers, anonymous visitors) gets the ordinary 404 page or JSON body instead.
* :class:`OneLineForbiddenFilter`: a refused request is routine (a customer opening an operator
  page), so its log record is one line, without the traceback Django attaches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, get_resolver
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
    # The exception's text is never shown: it may name a model or a query ("No Workload
    # matches the given query.") which says nothing to a person.
    return defaults.page_not_found(request, Http404())


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return JsonResponse(
            {"detail": _("Internal server error; it has been logged."), "code": "server_error"},
            status=500,
        )
    return defaults.server_error(request)


def sees_debug_pages(request: HttpRequest) -> bool:
    """Django's technical error pages are shown, under DEBUG only, to staff accounts only."""
    user = getattr(request, "user", None)
    return bool(settings.DEBUG and user is not None and user.is_staff)


class FriendlyNotFoundMiddleware:
    """Under DEBUG, answers 404s of non-staff with :func:`not_found` instead of Django's
    technical page (which lists the URL patterns and names the view).

    Without DEBUG it does nothing: Django then calls ``handler404`` itself. It must sit after
    ``AuthenticationMiddleware`` (it asks who is asking) and inside ``CommonMiddleware`` (whose
    ``APPEND_SLASH`` still turns a 404 for ``/hardware`` into a redirect to ``/hardware/``).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.DEBUG and not sees_debug_pages(request):
            # A path no pattern matches fails in URL resolution, before any middleware's
            # process_exception could see it: resolve it here first.
            urlconf = getattr(request, "urlconf", None)
            try:
                get_resolver(urlconf).resolve(request.path_info)
            except Resolver404:
                return not_found(request)
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, Http404) and settings.DEBUG and not sees_debug_pages(request):
            return not_found(request, exception)
        return None


class OneLineForbiddenFilter(logging.Filter):
    """Drops the traceback from ``django.request``'s "Forbidden (Permission denied)" records.

    A 403 is an answer, not a fault: one warning line (path, status) is what an operator needs;
    the traceback of ``PermissionDenied`` only repeated the decorator's stack on every refusal.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True
