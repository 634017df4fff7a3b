"""Strict query parameters for every list API: an unknown filter is a 400 naming it.

A list that silently ignores ``?name=train-0204`` answers *every* row, and a script that
misspells a filter acts on all of them. :class:`StrictFilterBackend` (the API's default filter
backend) accepts only the parameters the endpoint understands — its filterset's filters, the
pagination parameters, ``format``, and whatever the view declares in ``extra_query_params``
(parameters it reads itself) — and answers anything else with the one error body::

    400 {"detail": "unknown query parameter(s): nmae; this list accepts: cluster, kind, ...",
         "code": "invalid", "errors": {"nmae": ["unknown query parameter ..."]}}

Non-list views built on DRF's generic views do not pass through it; views that are not generic
(the dashboards' data endpoints) call :func:`reject_unknown_params` with their own set.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils.translation import gettext as _
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework.exceptions import ValidationError
from rest_framework.mixins import ListModelMixin
from rest_framework.request import Request
from rest_framework.settings import api_settings

# Every API answer understands these (DRF's format override, e.g. ?format=json|api|csv).
ALWAYS_ALLOWED = frozenset({api_settings.URL_FORMAT_OVERRIDE or "format"})


def unknown_params(keys: Iterable[str], allowed: Iterable[str]) -> list[str]:
    """The names in ``keys`` (a query string's) that are not ``allowed``, sorted; for pages,
    which answer them with a 400 page naming them."""
    known = set(allowed) | ALWAYS_ALLOWED
    return sorted({key for key in keys if key not in known})


def reject_unknown_params(request: Request, allowed: Iterable[str]) -> None:
    """Raise a 400 naming every query parameter of ``request`` not in ``allowed``."""
    known = set(allowed) | ALWAYS_ALLOWED
    unknown = unknown_params(request.query_params, known)
    if not unknown:
        return
    accepted = ", ".join(sorted(known))
    raise ValidationError(
        {
            key[:64]: [
                _("unknown query parameter; this list accepts: %(accepted)s")
                % {"accepted": accepted}
            ]
            for key in unknown[:20]
        }
    )


def list_params(view, queryset=None, backend: DjangoFilterBackend | None = None) -> set[str]:
    """The query parameters a generic list ``view`` understands."""
    allowed: set[str] = set(getattr(view, "extra_query_params", ()))
    paginator = getattr(view, "paginator", None)
    if paginator is not None:
        for attr in ("page_query_param", "page_size_query_param", "limit_query_param",
                     "offset_query_param", "cursor_query_param"):  # fmt: skip
            name = getattr(paginator, attr, None)
            if name:
                allowed.add(name)
    backend = backend or DjangoFilterBackend()
    filterset_class = backend.get_filterset_class(view, queryset)
    if filterset_class is not None:
        for name, declared in filterset_class.base_filters.items():
            allowed.add(name)
            # Range-style filters read ``name_min``/``name_max`` (or _after/_before) too.
            widget = getattr(declared.field_class, "widget", None)
            for suffix in getattr(widget, "suffixes", ()) or ():
                if suffix:
                    allowed.add(f"{name}_{suffix}")
    return allowed


def is_list_request(request: Request, view) -> bool:
    if getattr(view, "action", None) is not None:
        return view.action == "list"
    return isinstance(view, ListModelMixin) and request.method in ("GET", "HEAD")


class StrictFilterBackend(DjangoFilterBackend):
    """django-filter's backend that refuses query parameters a list does not understand."""

    def filter_queryset(self, request: Request, queryset, view):
        if is_list_request(request, view):
            reject_unknown_params(request, list_params(view, queryset, self))
        return super().filter_queryset(request, queryset, view)
