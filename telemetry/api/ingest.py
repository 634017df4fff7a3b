"""Telemetry API: ingestion (JSON batch) and the metric catalogue."""

from __future__ import annotations

import json
import time

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ParseError, PermissionDenied, ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.parsers import BaseParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.authentication import IntegrationPrincipal
from accounts.api.permissions import HasRequiredScope
from cluster_portal.web.bodies import read_limited, require_length
from telemetry.catalogue.refusals import refusal_record_error, refusals_record_reply
from telemetry.errors import IdempotencyConflict, IngestionError
from telemetry.ingest.idempotency import payload_digest, with_idempotency
from telemetry.models import IngestRefusal, MetricDefinition
from telemetry.receivers.json_batch import ingest_json_batch
from telemetry.receivers.text import ingest_prometheus_text
from telemetry.store.provenance import source_for_principal


def principal_key(request: Request) -> str:
    user = request.user
    if isinstance(user, IntegrationPrincipal):
        return f"token:{user.token.pk}"
    return f"user:{user.pk}"


def ingestion_response(
    request: Request, digest: str, work, *, path: str, cluster_name: str = ""
) -> Response:
    """Run an ingestion under the request's Idempotency-Key; errors become 4xx bodies.
    Refusals (the whole request, or the samples its reply lists) are counted per reason
    outside the ingestion's transaction; a replayed answer counts nothing again."""
    try:
        body, replayed = with_idempotency(
            key=request.headers.get("Idempotency-Key"),
            principal=principal_key(request),
            digest=digest,
            work=lambda: _atomic(work),
        )
    except IngestionError as exc:
        if not isinstance(exc, IdempotencyConflict):
            refusal_record_error(cluster_name=cluster_name, path=path, error=exc)
        return Response(exc.as_dict(), status=exc.status_code)
    if not replayed:
        refusals_record_reply(cluster_name=cluster_name, path=path, reply=body)
    response = Response(body, status=200 if replayed else 201)
    if replayed:
        response["Idempotent-Replayed"] = "true"
    return response


def _atomic(work):
    with transaction.atomic():
        return work()


def _read_body(stream, parser_context) -> bytes:
    """The raw body through ``INGEST_MAX_BODY_BYTES`` (413 beyond it), kept on the view for
    the idempotency digest so nothing reads it twice."""
    request = (parser_context or {}).get("request")
    declared = request.META.get("CONTENT_LENGTH") if request is not None else None
    raw = (
        read_limited(stream, limit=settings.INGEST_MAX_BODY_BYTES, declared=declared)
        if stream
        else b""
    )
    view = (parser_context or {}).get("view")
    if view is not None:
        view.raw_body = raw
    return raw


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _depth_exceeded(value: object, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


class BoundedJSONParser(BaseParser):
    """JSON read through the body limit; NaN/Infinity, deep nesting and bad text are 400s."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = _read_body(stream, parser_context)
        try:
            data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        except RecursionError:
            raise ParseError(_("JSON nested too deeply.")) from None
        except (UnicodeDecodeError, ValueError) as exc:
            raise ParseError(_("JSON parse error: %(error)s") % {"error": str(exc)[:200]}) from None
        if _depth_exceeded(data, settings.INGEST_MAX_JSON_DEPTH):
            raise ParseError(
                _("JSON nested deeper than %(depth)d levels (INGEST_MAX_JSON_DEPTH).")
                % {"depth": settings.INGEST_MAX_JSON_DEPTH}
            )
        return data


class PrometheusTextParser(BaseParser):
    """Accepts the exposition as exporters serve it (``text/plain; version=0.0.4``)."""

    media_type = "text/plain"

    def parse(self, stream, media_type=None, parser_context=None) -> str:
        raw = _read_body(stream, parser_context)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(
                _("The body is not UTF-8 text (invalid byte at offset %(offset)d).")
                % {"offset": exc.start}
            ) from None


IngestResultSerializer = inline_serializer(
    name="IngestResult",
    fields={
        "accepted": serializers.IntegerField(),
        "inserted": serializers.IntegerField(),
        "duplicates": serializers.IntegerField(),
    },
)

SampleBatchSerializer = inline_serializer(
    name="SampleBatch",
    fields={
        "samples": serializers.ListField(
            child=inline_serializer(
                name="SampleIn",
                fields={
                    "metric": serializers.CharField(),
                    "cluster": serializers.CharField(),
                    "entity_kind": serializers.CharField(),
                    "entity": serializers.CharField(),
                    "ts": serializers.CharField(help_text="ISO 8601 with zone, or unix seconds"),
                    "value": serializers.FloatField(),
                },
            )
        )
    },
)

IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    str,
    location=OpenApiParameter.HEADER,
    description="Replays answer the first result and write nothing (200, not 201).",
)


@extend_schema(
    request=SampleBatchSerializer,
    parameters=[IDEMPOTENCY_KEY],
    responses={201: IngestResultSerializer, 200: IngestResultSerializer, 422: OpenApiTypes.OBJECT},
)
class _BoundedBody(APIView):
    """Ingestion bodies: a Content-Length is required (411), then read through the limit."""

    raw_body = b""

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        require_length(request.META)


class SampleBatchView(_BoundedBody):
    """POST a JSON batch ``{"samples": [{metric, cluster, entity_kind, entity, ts, value}]}``.

    Atomic: one bad row answers 400 naming the row and field, and nothing is written.
    """

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "ingest"
    parser_classes = [BoundedJSONParser]
    raw_body = b""

    def post(self, request: Request) -> Response:
        tenant = getattr(request.user, "tenant", None)
        payload = request.data  # parsed through the body limit; sets raw_body
        digest = payload_digest(self.raw_body)
        return ingestion_response(
            request,
            digest,
            lambda: ingest_json_batch(
                payload=payload,
                tenant=tenant,
                provenance=source_for_principal(request.user),
            ),
            path=IngestRefusal.Path.JSON,
            cluster_name=_first_cluster(payload),
        )


def _first_cluster(payload) -> str:
    """The cluster a JSON batch's refusal is counted against: its first sample's."""
    samples = payload.get("samples") if isinstance(payload, dict) else None
    first = samples[0] if isinstance(samples, list) and samples else None
    cluster = first.get("cluster") if isinstance(first, dict) else None
    return cluster if isinstance(cluster, str) else ""


@extend_schema(
    request={"text/plain": OpenApiTypes.STR},
    parameters=[
        IDEMPOTENCY_KEY,
        OpenApiParameter("cluster", str, required=True, description="The scraped cluster."),
        OpenApiParameter("node", str, description="Hostname the exposition came from."),
        OpenApiParameter("source", str, enum=["auto", "dcgm", "npu"]),
    ],
    responses={201: OpenApiTypes.OBJECT, 200: OpenApiTypes.OBJECT, 422: OpenApiTypes.OBJECT},
)
class PrometheusIngestView(_BoundedBody):
    """POST exporter text: ``?cluster=NAME[&node=HOST][&source=dcgm|npu|auto]``.

    Unseen nodes and accelerators are registered under the cluster; exporter-only metrics are
    kept under their own names; the answer counts accepted, mapped and dropped-with-reason.
    """

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "ingest"
    parser_classes = [PrometheusTextParser]
    raw_body = b""

    def post(self, request: Request) -> Response:
        params = request.query_params
        if request.user.tenant_id is not None:
            raise PermissionDenied(
                _("Exporter text is infrastructure data: use an operator-level token.")
            )
        if not params.get("cluster"):
            raise ValidationError({"cluster": [_("Required: the scraped cluster's name.")]})
        text = request.data if isinstance(request.data, str) else ""
        digest = payload_digest(self.raw_body, extra=request.get_full_path())
        return ingestion_response(
            request,
            digest,
            lambda: ingest_prometheus_text(
                text=text,
                cluster_name=params["cluster"],
                node=params.get("node") or None,
                source=params.get("source", "auto"),
                scrape_time=time.time(),
                provenance=source_for_principal(request.user),
            ),
            path=IngestRefusal.Path.PROMETHEUS,
            cluster_name=params["cluster"],
        )


class MetricDefinitionSerializer(serializers.ModelSerializer):
    class Meta:
        model = MetricDefinition
        fields = ["name", "unit", "entity_kind", "type", "description", "mapped"]


class MetricCatalogueView(ListAPIView):
    """The metric catalogue: every metric name the store accepts, with unit and entity kind.

    Customers (and tenant tokens) see the portal's own metrics only: names exporters pushed
    that the portal does not map (``mapped=false``) are staff-only, so a push can never write
    into the catalogue customers read."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"
    serializer_class = MetricDefinitionSerializer

    def get_queryset(self):
        metrics = MetricDefinition.objects.order_by("name")
        user = self.request.user
        if not getattr(user, "sees_all_tenants", False) or getattr(user, "is_customer", False):
            metrics = metrics.filter(mapped=True)
        return metrics
