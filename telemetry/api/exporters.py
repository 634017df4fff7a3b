"""Exporter scrape targets with their last success and error (staff)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers
from rest_framework.generics import ListAPIView
from rest_framework.permissions import IsAuthenticated

from accounts.api.permissions import HasRequiredScope
from accounts.api.scoping import StaffOnlyMixin
from telemetry.models import ExporterTarget


class ExporterTargetSerializer(serializers.ModelSerializer):
    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = ExporterTarget
        fields = ["id", "name", "url", "kind", "cluster", "node", "interval_seconds",
                  "timeout_seconds", "enabled", "last_attempt_at", "last_success_at",
                  "last_error_at", "last_error", "last_counts", "consecutive_failures",
                  "created_by", "created_at", "approved_by", "approved_at"]  # fmt: skip


class ExporterTargetListView(StaffOnlyMixin, ListAPIView):
    """Scrape targets with their last success and error (what /exporters/ shows)."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"
    serializer_class = ExporterTargetSerializer
    queryset = ExporterTarget.objects.select_related("cluster").order_by("name")
    filterset_fields = ["enabled", "kind"]
    staff_only_message = _("Exporter targets are visible to cluster staff only.")
