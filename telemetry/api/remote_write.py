"""The Prometheus remote-write 1.0 receiver: ``POST /api/v1/telemetry/remote-write/``."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import transaction
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.parsers import BaseParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from cluster_portal.web.errors import error_body
from cluster_portal.web.queue_time import queued_seconds
from telemetry.errors import IngestionError
from telemetry.receivers.remote_write.service import (
    ingest_remote_write,
    remote_write_cluster_known,
    remote_write_record,
    remote_write_shed_record,
)
from telemetry.store.provenance import source_for_principal

PROTOBUF = "application/x-protobuf"
REMOTE_WRITE_V1 = "prometheus.WriteRequest"


def _media_parameter(parameters: str, name: str) -> str:
    """One parameter of a Content-Type's ``;a=b;c=d`` tail (quotes stripped), or ''."""
    for item in parameters.split(";"):
        key, _sep, value = item.partition("=")
        if key.strip().lower() == name:
            return value.strip().strip('"')
    return ""


logger = logging.getLogger(__name__)


class SnappyProtobufParser(BaseParser):
    """The body as sent: a snappy-compressed protobuf ``WriteRequest`` (decoded by the service)."""

    media_type = PROTOBUF

    def parse(self, stream, media_type=None, parser_context=None) -> bytes:
        return stream.read() if stream else b""


def _error(status: int, message: str, code: str, field: str | None = "body") -> Response:
    body = error_body(status, {"detail": message}, code)
    if field:
        body["field"] = field
    return Response(body, status=status)


@extend_schema(
    request={PROTOBUF: OpenApiTypes.BINARY},
    parameters=[
        OpenApiParameter("cluster", str, required=True, description="The sending cluster."),
        OpenApiParameter(
            "node", str, description="Host for series with no Hostname label (else `instance`)."
        ),
        OpenApiParameter("source", str, enum=["auto", "dcgm", "npu"]),
        OpenApiParameter(
            "Content-Encoding", str, location=OpenApiParameter.HEADER, enum=["snappy"]
        ),
    ],
    responses={
        200: OpenApiResponse(OpenApiTypes.OBJECT, description="Stored; counts as the text path."),
        400: OpenApiResponse(OpenApiTypes.OBJECT, description="Not a WriteRequest: not retried."),
        413: OpenApiResponse(OpenApiTypes.OBJECT, description="Over a size or sample limit."),
        415: OpenApiResponse(OpenApiTypes.OBJECT, description="Not snappy protobuf."),
        503: OpenApiResponse(
            OpenApiTypes.OBJECT, description="Waited past the sender's timeout: resend."
        ),
    },
)
class RemoteWriteView(APIView):
    """Prometheus remote-write 1.0: ``?cluster=NAME[&node=HOST][&source=dcgm|npu|auto]``.

    Point Prometheus' ``remote_write`` here with an operator-level ``ingest`` token. dcgm- and
    npu-exporter series go through the same mapping, limits and store as exporter text; other
    families are dropped and counted. A resent batch stores nothing twice; bad input answers
    4xx (which Prometheus does not retry) in the usual error body.
    """

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "ingest"
    # Not the ``ingest`` budget: a Prometheus drops a throttled batch for good (issue 22 §6).
    throttle_scope = "remote_write"
    parser_classes = [SnappyProtobufParser]

    def post(self, request: Request) -> Response:
        shed_after = settings.INGEST_REMOTE_WRITE_SHED_SECONDS
        waited = queued_seconds(request.META) if shed_after else 0.0
        if (
            shed_after
            and waited > shed_after
            and remote_write_cluster_known(cluster_name=request.query_params.get("cluster", ""))
        ):
            # Only a known cluster's request is shed (and counted): an unknown one goes on to
            # its 4xx below, which Prometheus does not retry.
            # Prometheus stopped waiting after its remote_timeout (30 s) and is resending this
            # batch: storing it now costs a batch of work to skip duplicates. A 5xx is retried.
            logger.warning("remote-write request shed after %.1f s in the queue", waited)
            message = _(
                "The request waited %(waited).0f s in the server's queue, longer than the "
                "sender's timeout (INGEST_REMOTE_WRITE_SHED_SECONDS = %(limit)s): resend it."
            ) % {"waited": waited, "limit": shed_after}
            remote_write_shed_record(cluster_name=request.query_params.get("cluster", ""))
            body = error_body(503, {"detail": message}, "overloaded")
            return Response(body, status=503, headers={"Retry-After": "5"})
        params = request.query_params
        if request.user.tenant_id is not None:
            raise PermissionDenied(
                _("Remote-write is infrastructure data: use an operator-level token.")
            )
        cluster = params.get("cluster")
        if not cluster:
            raise ValidationError({"cluster": [_("Required: the sending cluster's name.")]})
        content_type, _sep, parameters = request.content_type.partition(";")
        content_type = content_type.strip().lower()
        encoding = request.headers.get("Content-Encoding", "snappy").strip().lower()
        proto = _media_parameter(parameters, "proto")
        if content_type == PROTOBUF and proto and proto != REMOTE_WRITE_V1:
            # Remote-write 2.0 (``proto=io.prometheus.write.v2.Request``) has another message:
            # decoding it as 1.0 read garbage. The 2.0 spec asks a 415 for a message a
            # receiver does not take; the text names the one it does.
            message = _(
                "Remote-write message %(proto)s is not supported: send %(v1)s (remote-write "
                "1.0; in Prometheus, protobuf_message: prometheus.WriteRequest)."
            ) % {"proto": proto, "v1": REMOTE_WRITE_V1}
            remote_write_record(cluster_name=cluster, error=message, reason="invalid_body")
            return _error(415, message, "unsupported_media_type", field=None)
        if content_type != PROTOBUF or encoding != "snappy":
            message = _(
                "Expected remote-write 1.0: Content-Type %(type)s with Content-Encoding snappy, "
                "got %(got_type)s / %(got_encoding)s."
            ) % {"type": PROTOBUF, "got_type": content_type or "-", "got_encoding": encoding}
            remote_write_record(cluster_name=cluster, error=message, reason="invalid_body")
            return _error(415, message, "unsupported_media_type", field=None)
        declared = request.META.get("CONTENT_LENGTH") or ""
        if declared.isdigit() and int(declared) > settings.INGEST_REMOTE_WRITE_MAX_BYTES:
            # Refused before the body is read at all.
            message = _(
                "The body is %(size)s bytes, over the remote-write limit of %(limit)s "
                "(INGEST_REMOTE_WRITE_MAX_BYTES)."
            ) % {"size": declared, "limit": settings.INGEST_REMOTE_WRITE_MAX_BYTES}
            remote_write_record(cluster_name=cluster, error=message, reason="too_large")
            return _error(413, message, "too_large")
        try:
            body = request.body
        except RequestDataTooBig:
            message = _("The body is larger than the server accepts (DATA_UPLOAD_MAX_MEMORY_SIZE).")
            remote_write_record(cluster_name=cluster, error=message, reason="too_large")
            return _error(413, message, "too_large")
        try:
            with transaction.atomic():
                result = ingest_remote_write(
                    body=body,
                    cluster_name=cluster,
                    node=params.get("node") or None,
                    source=params.get("source", "auto"),
                    provenance=source_for_principal(request.user),
                )
        except IngestionError as exc:
            remote_write_record(cluster_name=cluster, error=exc.message, reason=exc.reason)
            body = error_body(exc.status_code, exc.as_dict(), exc.code)
            return Response(body, status=exc.status_code)
        remote_write_record(cluster_name=cluster, result=result)
        return Response(result, status=200)
