"""One error body for every API answer that is not a success.

Every 4xx/5xx JSON body has ``detail`` (a sentence for people) and ``code`` (a stable token for
programs); validation failures add ``errors`` (field -> list of messages), so a client never
has to guess which of DRF's several shapes it got. Model validation (``full_clean`` in
services) surfaces as a 400 in the same shape instead of a 500.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext as _
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.views import exception_handler

from cluster_portal.web.bodies import PayloadTooLarge

STATUS_CODES = {
    400: "invalid",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "unprocessable",
    429: "throttled",
}


def _flatten(errors: Any) -> list[str]:
    if isinstance(errors, dict):
        return [message for value in errors.values() for message in _flatten(value)]
    if isinstance(errors, list | tuple):
        return [message for value in errors for message in _flatten(value)]
    return [str(errors)]


def _summary(errors: dict) -> str:
    parts = []
    for field, messages in errors.items():
        text = "; ".join(_flatten(messages))
        parts.append(text if field in ("non_field_errors", "detail") else f"{field}: {text}")
    return " ".join(parts) or _("Invalid input.")


def error_body(status_code: int, data: Any, code: str | None = None) -> dict:
    """Reshape whatever an exception produced into ``{detail, code[, errors]}``."""
    code = code or STATUS_CODES.get(status_code, "error")
    if isinstance(data, dict) and "detail" in data and not isinstance(data["detail"], list | dict):
        body = {"detail": str(data["detail"]), "code": code}
        body.update({k: v for k, v in data.items() if k not in ("detail", "code")})
        return body
    if isinstance(data, dict):
        errors = {str(field): _flatten(messages) for field, messages in data.items()}
        return {"detail": _summary(errors), "code": code, "errors": errors}
    messages = _flatten(data)
    return {"detail": " ".join(messages), "code": code, "errors": {"non_field_errors": messages}}


def sees_internal_detail(request) -> bool:
    """Signed-in staff (an account, never a token principal, read-only or not) may read what an
    exception keeps for staff (``staff_detail``: a data source's address and its answer)."""
    user = getattr(request, "user", None)
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and getattr(user, "is_staff", False)
        and getattr(user, "_meta", None) is not None
    )


def portal_exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(as_serializer_error(exc))
    if isinstance(exc, RequestDataTooBig):
        # Django's own refusal of a body over DATA_UPLOAD_MAX_MEMORY_SIZE is a bare HTML 400;
        # an API client gets the one JSON error body, as ingestion's own limit answers.
        exc = PayloadTooLarge(
            _("The request body is larger than %(limit)d bytes (DATA_UPLOAD_MAX_MEMORY_SIZE).")
            % {"limit": settings.DATA_UPLOAD_MAX_MEMORY_SIZE}
        )
    response = exception_handler(exc, context)
    if response is None:
        return None
    code = None
    if (
        isinstance(exc, exceptions.APIException)
        and response.status_code != status.HTTP_400_BAD_REQUEST
    ):
        detail = getattr(exc, "detail", None)
        code = getattr(detail, "code", None) if not isinstance(detail, dict | list) else None
    response.data = error_body(response.status_code, response.data, code)
    staff_detail = getattr(exc, "staff_detail", None)
    if staff_detail and sees_internal_detail(context.get("request")):
        response.data["staff_detail"] = staff_detail
    return response


def form_validation_error(form) -> exceptions.ValidationError:
    """A Django form's errors as the API's 400 (forms hold validation shared with pages)."""
    return exceptions.ValidationError(
        {
            field: [error["message"] for error in errors]
            for field, errors in form.errors.get_json_data().items()
        }
    )
