"""Inventory reads: clusters (staff) and workloads (tenant-scoped)."""

from __future__ import annotations

import django_filters
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.permissions import IsAuthenticated

from accounts.api.permissions import HasRequiredScope
from accounts.api.scoping import StaffOnlyMixin, TenantScopedMixin
from inventory.models import Cluster, Workload


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
                  "slo_ttft_ms", "slo_tpot_ms", "slo_p99_ms"]  # fmt: skip


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
