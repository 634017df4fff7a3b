"""Scheduler sources per cluster (operators) and the jobs they reported (tenant-scoped)."""

from __future__ import annotations

import django_filters
from django.db import IntegrityError
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.generics import (
    GenericAPIView,
    ListAPIView,
    ListCreateAPIView,
    RetrieveUpdateDestroyAPIView,
)
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.validators import UniqueValidator

from accounts.api.permissions import HasRequiredScope
from accounts.api.scoping import OperatorSourceMixin, TenantScopedMixin
from inventory.models import Cluster
from scheduling.models import SchedulerJob, SchedulerSource
from scheduling.services.sources import (
    SOURCE_FIELDS,
    scheduler_source_create,
    scheduler_source_delete,
    scheduler_source_update,
)
from scheduling.services.sync import scheduler_source_sync

DUPLICATE = _("This cluster already has a scheduler source; edit that one.")


class SchedulerSourceSerializer(serializers.ModelSerializer):
    """``token_env`` names the environment variable holding the JWT: write-only, never
    answered (``has_token_env`` says whether one is set); the token itself is never stored."""

    cluster = serializers.SlugRelatedField(
        slug_field="name",
        queryset=Cluster.objects.all(),
        validators=[UniqueValidator(SchedulerSource.objects.all(), message=DUPLICATE)],
    )
    token_env = serializers.CharField(write_only=True, max_length=100)
    has_token_env = serializers.SerializerMethodField()

    class Meta:
        model = SchedulerSource
        fields = ["id", "cluster", "kind", "base_url", "user_name", "token_env",
                  "has_token_env", "timeout_seconds", "enabled", "api_version",
                  "jobs_update_time", "last_success_at", "last_error_at", "last_error",
                  "last_refused"]  # fmt: skip
        read_only_fields = ["api_version", "jobs_update_time", "last_success_at",
                            "last_error_at", "last_error", "last_refused"]  # fmt: skip

    def get_has_token_env(self, obj: SchedulerSource) -> bool:
        return bool(obj.token_env)

    def validate(self, attrs: dict) -> dict:
        if self.instance is not None and "cluster" in attrs:
            if attrs["cluster"] != self.instance.cluster:
                raise serializers.ValidationError(
                    {"cluster": [_("A source's cluster cannot change; create another source.")]}
                )
            del attrs["cluster"]
        return attrs

    def create(self, validated_data: dict) -> SchedulerSource:
        # Two requests racing past the check meet the one-per-cluster constraint: still a 400.
        try:
            return scheduler_source_create(**validated_data)
        except IntegrityError:
            raise serializers.ValidationError({"cluster": [DUPLICATE]}) from None

    def update(self, instance: SchedulerSource, validated_data: dict) -> SchedulerSource:
        changes = {k: v for k, v in validated_data.items() if k in SOURCE_FIELDS}
        return scheduler_source_update(source=instance, **changes)


class _Operators(OperatorSourceMixin):
    serializer_class = SchedulerSourceSerializer
    queryset = SchedulerSource.objects.select_related("cluster").order_by("cluster__name")
    staff_only_message = _("Scheduler sources are managed by cluster operators only.")


class SchedulerSourceListView(_Operators, ListCreateAPIView):
    """Scheduler sources: the clusters whose jobs, nodes and partitions are polled."""


class SchedulerSourceDetailView(_Operators, RetrieveUpdateDestroyAPIView):
    """One scheduler source; ``token_env`` is write-only."""

    def perform_destroy(self, instance: SchedulerSource) -> None:
        scheduler_source_delete(source=instance)


_SYNC_ANSWER = inline_serializer(
    "SchedulerSyncAnswer",
    {
        "cluster": serializers.CharField(),
        "api_version": serializers.CharField(),
        "jobs": serializers.IntegerField(allow_null=True),
        "nodes": serializers.IntegerField(),
        "partitions": serializers.IntegerField(),
        "refused": serializers.DictField(child=serializers.IntegerField()),
    },
)


class SchedulerSourceSyncView(_Operators, GenericAPIView):
    """``POST``: poll the source once (jobs incrementally, nodes, partitions) and answer the
    counts (``jobs`` is null when nothing changed). A scheduler that cannot be read is a 503
    with the reason, recorded as the source's last error; nothing else is written."""

    @extend_schema(
        request=None, responses={200: _SYNC_ANSWER}, operation_id="scheduler_source_sync"
    )
    def post(self, request: Request, pk: int) -> Response:
        source = self.get_object()
        result = scheduler_source_sync(source=source)
        return Response(
            {
                "cluster": source.cluster.name,
                "api_version": result.api_version,
                "jobs": result.jobs,
                "nodes": result.nodes,
                "partitions": result.partitions,
                "refused": result.refused,
            }
        )


class SchedulerJobSerializer(serializers.ModelSerializer):
    cluster = serializers.CharField(source="source.cluster.name", read_only=True)
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = SchedulerJob
        fields = ["id", "cluster", "tenant", "job_id", "name", "account", "user_name",
                  "partition", "state", "state_reason", "nodes", "allocation", "gpus", "npus",
                  "submit_time", "start_time", "end_time", "synced_at"]  # fmt: skip
        read_only_fields = fields


class SchedulerJobFilter(django_filters.FilterSet):
    cluster = django_filters.CharFilter(
        field_name="source__cluster__name", help_text="Cluster name."
    )
    state = django_filters.CharFilter(help_text="Scheduler state (e.g. RUNNING, PENDING).")

    class Meta:
        model = SchedulerJob
        fields = ["cluster", "state"]


class SchedulerJobListView(TenantScopedMixin, ListAPIView):
    """Scheduler jobs the caller may see (customers: their tenant's, through the account
    mappings the sync applied); filterable by cluster and state."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"
    serializer_class = SchedulerJobSerializer
    filterset_class = SchedulerJobFilter

    def base_queryset(self):
        return SchedulerJob.objects.select_related("source__cluster", "tenant").order_by(
            "source__cluster__name", "-job_id"
        )
