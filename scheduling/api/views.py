"""Scheduler sources per cluster (operators), the jobs they reported, queues and the
allocated-but-idle list (tenant-scoped)."""

from __future__ import annotations

import django_filters
from django.db import IntegrityError
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
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
from rest_framework.views import APIView

from accounts.api.permissions import HasRequiredScope
from accounts.api.scoping import OperatorSourceMixin, TenantScopedMixin
from accounts.selectors.scoping import scope_to_tenant
from cluster_portal.web.filters import reject_unknown_params
from inventory.models import Cluster
from scheduling.models import SchedulerJob, SchedulerSource
from scheduling.selectors.idle import IdleReport, idle_allocations
from scheduling.selectors.queues import (
    WAIT_WINDOW,
    WaitStat,
    pending_by_partition,
    wait_percentiles,
)
from scheduling.selectors.quotas import QuotaUse, quotas_beside_use
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
                  "submit_time", "start_time", "end_time", "estimated_start",
                  "synced_at"]  # fmt: skip
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


class SchedulerQueuesView(APIView):
    """``GET ?cluster=``: pending jobs per partition (reason, cards, the scheduler's estimated
    start) and wait percentiles (P50/P90 of submit → start, seconds) over the last 7 days per
    tenant and per UTC hour of day of submission, and each card quota the schedulers state
    (Kueue ClusterQueue, Volcano queue, Slurm account GrpTRES) beside the cards its jobs hold
    and ask for (``null`` limit: none set). Customers and tenant tokens see their own tenant's
    jobs, accounts, and queues with their own use only."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    @extend_schema(
        parameters=[OpenApiParameter("cluster", OpenApiTypes.STR, description="Cluster name.")],
        responses={200: OpenApiTypes.OBJECT},
        operation_id="scheduler_queues",
    )
    def get(self, request: Request) -> Response:
        reject_unknown_params(request, ("cluster",))
        cluster = (request.query_params.get("cluster") or "").strip()
        per_tenant, per_hour = wait_percentiles(request.user, cluster=cluster)
        return Response(
            {
                "pending": [
                    {
                        "cluster": group.cluster,
                        "partition": group.partition,
                        "jobs": len(group.jobs),
                        "cards": group.cards,
                        "reasons": group.reasons,
                        "queue": [_pending_json(job) for job in group.jobs],
                    }
                    for group in pending_by_partition(request.user, cluster=cluster)
                ],
                "wait_window_days": WAIT_WINDOW.days,
                "waits_per_tenant": [_wait_json(s) for s in per_tenant],
                "waits_per_hour": [_wait_json(s) for s in per_hour],
                "quotas": [
                    _quota_json(row) for row in quotas_beside_use(request.user, cluster=cluster)
                ],
            }
        )


def _quota_json(row: QuotaUse) -> dict:
    quota = row.quota
    out = {
        "cluster": row.cluster, "scope": quota.scope, "name": quota.name,
        "partition": quota.partition, "origin": quota.origin, "own_use_only": row.own_use_only,
    }  # fmt: skip
    if not row.own_use_only:
        out["tenants"] = row.tenants
    for kind in ("gpus", "npus"):
        out[kind] = {
            "quota": getattr(quota, kind),
            "borrowing_limit": getattr(quota, f"{kind}_borrowing_limit"),
            "in_use": getattr(row, f"{kind}_used"),
            "pending": getattr(row, f"{kind}_pending"),
            "scheduler_counts": getattr(row, f"reported_{kind}"),
        }
    return out


def _pending_json(job: SchedulerJob) -> dict:
    return {
        "job_id": job.job_id, "name": job.name, "tenant": job.tenant.slug,
        "account": job.account, "state_reason": job.state_reason,
        "cards": job.gpus + job.npus, "gpus": job.gpus, "npus": job.npus,
        "submit_time": job.submit_time.isoformat() if job.submit_time else None,
        "estimated_start": job.estimated_start.isoformat() if job.estimated_start else None,
    }  # fmt: skip


def _wait_json(stat: WaitStat) -> dict:
    return {
        "tenant": stat.tenant, "hour": stat.hour, "jobs": stat.count,
        "p50_seconds": stat.p50_seconds, "p90_seconds": stat.p90_seconds,
    }  # fmt: skip


def _idle_answer(report: IdleReport) -> dict:
    return {
        "rule": {"utilization_under_ratio": report.rule.ratio, "minutes": report.rule.minutes},
        "window": {"start": report.start.isoformat(), "end": report.end.isoformat()},
        "jobs_checked": report.jobs_checked,
        "jobs": [
            {
                "cluster": row.job.source.cluster.name,
                "job_id": row.job.job_id,
                "name": row.job.name,
                "tenant": row.job.tenant.slug,
                "account": row.job.account,
                "partition": row.job.partition,
                "cards_held": row.cards_held,
                "cards_idle": row.cards_idle,
                "cards_unmeasured": row.cards_unmeasured,
                "cards": row.cards,
                "longest_idle_minutes": round(row.longest_idle.total_seconds() / 60, 1),
                "idle_since": row.idle_since.isoformat() if row.idle_since else None,
                "idle_card_hours": round(row.idle_card_hours, 3),
            }
            for row in report.jobs
        ],
        "tenants": [
            {
                "tenant": t.tenant.slug,
                "jobs": t.jobs,
                "cards_idle": t.cards_idle,
                "idle_card_hours": round(t.idle_card_hours, 3),
            }
            for t in report.tenants
        ],
    }


class SchedulerIdleView(APIView):
    """Allocated but idle: running jobs holding cards whose measured utilization stayed under
    ``SCHEDULER_IDLE_UTILIZATION_PERCENT`` for at least ``SCHEDULER_IDLE_MINUTES`` in the last
    six hours, with the longest idle run, the idle card-hours and the totals per tenant.
    Customers see their own tenant's jobs only."""

    permission_classes = [IsAuthenticated, HasRequiredScope]
    required_scope = "read"

    @extend_schema(responses={200: OpenApiTypes.OBJECT}, operation_id="scheduler_idle")
    def get(self, request: Request) -> Response:
        jobs = scope_to_tenant(SchedulerJob.objects.all(), request.user, "tenant")
        return Response(_idle_answer(idle_allocations(jobs)))
