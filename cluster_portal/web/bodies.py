"""Reading request bodies through a size limit, before anything parses them.

Django's ``request.body`` refuses bodies over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` with a bare
HTML 400, and DRF's parsers read whatever arrives. Ingestion endpoints instead read the raw
stream here: a declared ``Content-Length`` over the limit is refused before one byte is read,
an undeclared (chunked) body as soon as it passes the limit, and either way the answer is a
413 in the one JSON error body.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy
from rest_framework import status
from rest_framework.exceptions import APIException

CHUNK = 1024 * 1024


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"
    default_detail = gettext_lazy("The request body is too large.")


class LengthRequired(APIException):
    status_code = status.HTTP_411_LENGTH_REQUIRED
    default_code = "length_required"
    default_detail = gettext_lazy(
        "Send the body with a Content-Length (chunked uploads are not accepted here)."
    )


def require_length(meta: dict) -> None:
    """Django reads nothing of a chunked WSGI body: say so instead of ingesting nothing."""
    chunked = "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower()
    if chunked and not meta.get("CONTENT_LENGTH"):
        raise LengthRequired()


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        gettext_lazy("The request body is larger than %(limit)d bytes (INGEST_MAX_BODY_BYTES).")
        % {"limit": limit}
    )


def read_limited(stream, *, limit: int, declared: str | int | None = None) -> bytes:
    """The whole body from ``stream``, or ``PayloadTooLarge`` once it passes ``limit`` bytes."""
    try:
        length = int(declared) if declared not in (None, "") else None
    except (TypeError, ValueError):
        length = None
    if length is not None and length > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = stream.read(min(CHUNK, limit + 1 - size))
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)
