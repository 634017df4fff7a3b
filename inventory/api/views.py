"""Inventory: clusters (staff), workloads (tenant-scoped) and their series selectors
(operators); the inventory import (operators)."""

from __future__ import annotations

from collections.abc import Mapping

import django_filters
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.api.scoping import StaffOnlyMixin, TenantScopedMixin
from inventory.models import Cluster, Workload
from inventory.services import InventoryImportError, inventory_import, workload_selector_set
from inventory.services.imports import FORMATS, format_of

MAX_IMPORT_BYTES = 5 * 1024 * 1024


class ClusterSerializer(serializers.ModelSerializer):
    hardware_model = serializers.CharField(source="hardware_model.name", allow_null=True)

    class Meta:
        model = Cluster
        fields = ["id", "name", "kind", "description", "hardware_model", "created_at"]


class ClusterListView(StaffOnlyMixin, ListAPIView):
    """Every cluster; ``?kind=unified|split``."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"
    serializer_class = ClusterSerializer
    queryset = Cluster.objects.select_related("hardware_model").order_by("name")
    filterset_fields = ["kind"]
    staff_only_message = _("The cluster inventory is visible to cluster staff only.")


class WorkloadSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Workload
        fields = ["id", "name", "tenant", "cluster", "kind", "criticality", "cards_requested",
                  "slo_ttft_ms", "slo_tpot_ms", "slo_p99_ms", "series_selector"]  # fmt: skip
        read_only_fields = ["series_selector"]


class WorkloadFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(field_name="cluster__name", help_text="Cluster name.")
    tenant = django_filters.CharFilter(field_name="tenant__slug", help_text="Tenant slug.")
    name = django_filters.CharFilter(
        lookup_expr="icontains", help_text="Part of the workload's name (case-insensitive)."
    )

    class Meta:
        model = Workload
        fields = ["kind", "criticality", "cluster", "tenant", "name"]


class _WorkloadBase(TenantScopedMixin):
    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"
    serializer_class = WorkloadSerializer

    def base_queryset(self):
        return Workload.objects.select_related("tenant", "cluster").order_by("cluster", "name")


class WorkloadListView(_WorkloadBase, ListAPIView):
    """Workloads the caller may see (customers: their tenant's), with SLOs; filterable."""

    filterset_class = WorkloadFilter


class WorkloadDetailView(_WorkloadBase, RetrieveAPIView):
    """One workload; another tenant's is a 404."""


class InventoryImportSerializer(serializers.Serializer):
    """The file as an upload (``file``) or inline (``content``); ``format`` from the file's
    name unless given; ``dry_run`` validates and counts without writing."""

    file = serializers.FileField(required=False)
    content = serializers.CharField(required=False, trim_whitespace=False)
    format = serializers.ChoiceField(choices=FORMATS, default="auto")
    dry_run = serializers.BooleanField(default=False)

    def validate(self, attrs: dict) -> dict:
        upload = attrs.get("file")
        if (upload is None) == ("content" not in attrs):
            raise serializers.ValidationError(_("Send the file as file or as content (one)."))
        if upload is not None:
            if upload.size > MAX_IMPORT_BYTES:
                raise serializers.ValidationError({"file": _("The file is larger than 5 MB.")})
            try:
                attrs["content"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise serializers.ValidationError(
                    {"file": _("The file is not UTF-8 text.")}
                ) from None
            if attrs["format"] == "auto":
                attrs["format"] = format_of(upload.name or "")
        elif len(attrs["content"].encode()) > MAX_IMPORT_BYTES:
            raise serializers.ValidationError({"content": _("The file is larger than 5 MB.")})
        return attrs


@extend_schema(
    request=InventoryImportSerializer,
    parameters=[
        OpenApiParameter("dry_run", bool, description="Validate and count; write nothing."),
    ],
    responses={
        200: OpenApiResponse(OpenApiTypes.OBJECT, description="Dry run: what would change."),
        201: OpenApiResponse(
            OpenApiTypes.OBJECT, description="Imported: nodes created/updated/unchanged."
        ),
        400: OpenApiResponse(
            OpenApiTypes.OBJECT,
            description="Refused: the first 100 problems with their lines, and their count.",
        ),
        404: OpenApiResponse(OpenApiTypes.OBJECT, description="No such cluster."),
    },
)
class InventoryImportView(StaffOnlyMixin, APIView):
    """Import a cluster's nodes, racks, supernodes and card models from CSV or YAML (operators).

    201 with created/updated/unchanged counts (200 for a dry run); 400 listing every problem
    with its line when any row is invalid, and nothing is written.
    """

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "ingest"  # operators: the scope that may change the inventory
    parser_classes = [JSONParser, MultiPartParser, FormParser]
    serializer_class = InventoryImportSerializer
    staff_only_message = _("The inventory is changed by cluster operators only.")

    def post(self, request: Request, name: str) -> Response:
        cluster = get_object_or_404(Cluster, name=name)
        if not isinstance(request.data, Mapping):  # a JSON null, number, list or string
            raise serializers.ValidationError(
                {"non_field_errors": [_("The body must be a JSON object (or a form upload).")]}
            )
        fields = ("file", "content", "format", "dry_run")
        data = {k: request.data.get(k) for k in fields if k in request.data}
        if "dry_run" not in data and request.query_params.get("dry_run"):
            data["dry_run"] = request.query_params["dry_run"]
        serializer = InventoryImportSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        attrs = serializer.validated_data
        try:
            report = inventory_import(
                cluster=cluster,
                text=attrs["content"],
                format=attrs["format"],
                dry_run=attrs["dry_run"],
            )
        except InventoryImportError as exc:
            return Response(
                {
                    "detail": _("The file was refused; nothing was written."),
                    "errors": [
                        {"line": p.line, "field": p.field, "message": p.message}
                        for p in exc.problems
                    ],
                    "error_count": exc.problem_count,
                    "errors_listed": len(exc.problems),
                },
                status=status.HTTP_400_BAD_REQUEST,
            )
        body = report.as_dict()
        return Response(body, status=status.HTTP_200_OK if report.dry_run else 201)


class WorkloadSelectorSerializer(serializers.Serializer):
    series_selector = serializers.CharField(
        allow_blank=True,
        max_length=500,
        trim_whitespace=True,
        help_text=_('PromQL-style label matchers, e.g. namespace="acme-bank", pod=~"llama-.*".'),
    )


class WorkloadSelectorView(_WorkloadBase, APIView):
    """Set a workload's series selector (operators): which exporter-labelled cards it holds.
    A bad selector is a 400 naming the problem; nothing changes."""

    @extend_schema(request=WorkloadSelectorSerializer, responses={200: WorkloadSerializer})
    def put(self, request: Request, pk: int) -> Response:
        workload = get_object_or_404(self.get_queryset(), pk=pk)
        if not request.user.has_perm("monitoring.operate_cluster"):
            raise PermissionDenied(
                _("Binding workloads to exporter series needs the operator role.")
            )
        payload = WorkloadSelectorSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            workload = workload_selector_set(
                workload_id=workload.pk, selector=payload.validated_data["series_selector"]
            )
        except ValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        return Response(WorkloadSerializer(workload).data)
