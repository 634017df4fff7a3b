"""Read API over the store: accelerators with their latest values, and range series."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.selectors.scoping import principal_sees_all
from cluster_portal.web.times import TimeParseError, parse_instant
from inventory.models import Accelerator, Cluster
from telemetry.models import Entity, EntityKind, MetricDefinition
from telemetry.read import latest_values, series_read
from telemetry.read.local.scoping import entities_visible_to

MAX_RANGE = timedelta(days=400)


class AcceleratorSerializer(serializers.ModelSerializer):
    cluster = serializers.CharField(source="node.cluster.name")
    node = serializers.CharField(source="node.hostname")
    entity = serializers.SerializerMethodField(
        help_text="Entity key: pass as entity= to /api/v1/telemetry/series/."
    )
    health = serializers.SerializerMethodField(
        help_text="absent (not seen for the cluster's absence threshold), else the last health."
    )
    parent = serializers.SlugRelatedField(
        slug_field="vendor_id", read_only=True, help_text="A MIG slice's GPU (its vendor_id)."
    )
    latest = serializers.SerializerMethodField()
    latest_status = serializers.SerializerMethodField(
        help_text='"ok", or "unavailable" when the cluster\'s PromQL data source is down '
        "(``latest`` is then empty; the rest of the row is the portal's inventory)."
    )

    class Meta:
        model = Accelerator
        fields = [
            "id",
            "cluster",
            "node",
            "index",
            "vendor_id",
            "model_name",
            "entity",
            "health",
            "last_seen",
            "parent",
            "mig_profile",
            "gpu_instance_id",
            "compute_instance_id",
            "latest",
            "latest_status",
        ]

    def get_entity(self, obj: Accelerator) -> str | None:
        return self.context["entity_keys"].get(obj.pk)

    def get_health(self, obj: Accelerator) -> str:
        return obj.state_label()

    def get_latest(self, obj: Accelerator) -> dict[str, float]:
        entity_id = self.context["entity_ids"].get(obj.pk)
        return self.context["latest"].get(entity_id, {})

    def get_latest_status(self, obj: Accelerator) -> str:
        entity_id = self.context["entity_ids"].get(obj.pk)
        return "unavailable" if entity_id in self.context["unavailable"] else "ok"


@extend_schema(
    parameters=[OpenApiParameter("cluster", str, required=True, description="Cluster name.")]
)
class AcceleratorListView(ListAPIView):
    """Accelerators of ``?cluster=NAME`` with model, node, health and the latest value of
    every metric reported in the last hour. Staff and operator-level tokens only."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"
    serializer_class = AcceleratorSerializer
    extra_query_params = ("cluster",)  # read below; anything else is a 400

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation
            return Accelerator.objects.none()
        if not principal_sees_all(self.request.user):
            raise PermissionDenied("Accelerator inventory is visible to cluster staff only.")
        name = self.request.query_params.get("cluster")
        if not name:
            raise ValidationError({"cluster": "required: the cluster's name"})
        if not Cluster.objects.filter(name=name).exists():
            raise NotFound(f"unknown cluster {name!r}")
        return (
            Accelerator.objects.filter(node__cluster__name=name)
            .select_related("node__cluster", "parent")
            .order_by("node__hostname", "index", "vendor_id")
        )

    def get_serializer_context(self) -> dict:
        context = super().get_serializer_context()
        page = getattr(self, "_page_objects", None)
        context["entity_ids"] = {}
        context["entity_keys"] = {}
        context["latest"] = {}
        context["unavailable"] = set()
        if page:
            entities = Entity.objects.filter(accelerator__in=page)
            rows = list(entities.values_list("accelerator_id", "id", "key"))
            context["entity_ids"] = {acc: entity_id for acc, entity_id, _ in rows}
            context["entity_keys"] = {acc: key for acc, _, key in rows}
            context["latest"] = latest_values(entities, unavailable=context["unavailable"])
        return context

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        self._page_objects = page
        return page


def _parse_time(value: str | None, name: str, default: datetime) -> datetime:
    """ISO 8601 with a zone or unix seconds, between 1970 and 9000; anything else a 400
    naming the parameter (``1e20``, ``inf``, ``nan``, 5,000 digits included)."""
    if not value:
        return default
    try:
        parsed = parse_instant(value, require_zone=True)
    except TimeParseError as exc:
        raise ValidationError({name: str(exc)}) from None
    if not 1970 <= parsed.year <= 9000:
        raise ValidationError({name: "must lie between 1970 and 9000"})
    return parsed


def _text_param(params, name: str) -> str:
    value = params.get(name, "")
    if len(value) > 300 or any(c < " " or c == "\x7f" for c in value):
        raise ValidationError({name: "too long, or contains control characters"})
    return value


SeriesSerializer = inline_serializer(
    name="Series",
    fields={
        "metric": serializers.CharField(),
        "unit": serializers.CharField(),
        "entity": serializers.CharField(),
        "source": serializers.CharField(),
        "step_seconds": serializers.IntegerField(),
        "start": serializers.DateTimeField(),
        "end": serializers.DateTimeField(),
        "points": serializers.ListField(
            child=inline_serializer(
                name="SeriesPoint",
                fields={
                    "ts": serializers.DateTimeField(),
                    "mean": serializers.FloatField(allow_null=True),
                    "min": serializers.FloatField(allow_null=True),
                    "max": serializers.FloatField(allow_null=True),
                    "count": serializers.IntegerField(),
                },
            )
        ),
    },
)


@extend_schema(
    responses=SeriesSerializer,
    parameters=[
        OpenApiParameter("metric", str, required=True, description="See /api/v1/metrics/."),
        OpenApiParameter("entity", str, required=True, description="The entity's key."),
        OpenApiParameter("cluster", str, description="Needed when the key is in several."),
        OpenApiParameter("kind", str, enum=list(EntityKind.values)),
        OpenApiParameter("start", str, description="ISO 8601 with zone, or unix seconds."),
        OpenApiParameter("end", str, description="ISO 8601 with zone, or unix seconds."),
    ],
)
class SeriesView(APIView):
    """``?metric=&entity=&[cluster=&kind=&]start=&end=``: one series at automatic resolution."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    def get(self, request: Request) -> Response:
        params = request.query_params
        now = datetime.now(tz=UTC)
        end = _parse_time(params.get("end"), "end", now)
        start = _parse_time(params.get("start"), "start", end - timedelta(hours=1))
        if start >= end:
            raise ValidationError({"start": "must be before end"})
        if end - start > MAX_RANGE:
            raise ValidationError({"start": "the range may span at most 400 days"})
        for name in ("metric", "entity", "cluster", "kind"):
            _text_param(params, name)
        metric = MetricDefinition.objects.filter(name=params.get("metric", "")).first()
        if metric is None:
            raise ValidationError({"metric": "unknown metric; see /api/v1/metrics/"})
        key = params.get("entity")
        if not key:
            raise ValidationError({"entity": "required: the entity key"})
        kind = params.get("kind") or metric.entity_kind
        if kind not in EntityKind.values:
            raise ValidationError({"kind": f"one of {', '.join(EntityKind.values)}"})
        entities = entities_visible_to(request.user).filter(key=key, kind=kind)
        if params.get("cluster"):
            entities = entities.filter(cluster__name=params["cluster"])
        matches = list(entities[:2])
        if not matches:
            raise NotFound("no such entity (or not visible to you)")
        if len(matches) > 1:
            raise ValidationError(
                {"cluster": "the entity key exists in several clusters; name one"}
            )
        series = series_read(metric=metric, entity=matches[0], start=start, end=end)
        return Response(
            {
                "metric": series.metric,
                "unit": metric.unit,
                "entity": series.entity_key,
                "source": series.source,
                "step_seconds": series.step_seconds,
                "start": start,
                "end": end,
                "points": [
                    {"ts": p.ts, "mean": p.mean, "min": p.min, "max": p.max, "count": p.count}
                    for p in series.points
                ],
            }
        )
