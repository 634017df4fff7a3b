"""Read serializers for plans, phases, gates, analysis runs, approvals and audit rows."""

from __future__ import annotations

from django.utils.translation import gettext as _
from rest_framework import serializers

from accounts.models import Tenant
from cluster_portal.web.errors import error_body
from inventory.models import Cluster, Workload
from rollout.models import (
    Aggregation,
    AnalysisRun,
    Approval,
    AuditEntry,
    BaselineWindow,
    Comparator,
    Criterion,
    Gate,
    Measurement,
    MetricResult,
    MigrationPlan,
    Phase,
    PhaseKind,
    PlanWorkload,
    RouterCall,
    TrafficRouter,
)
from rollout.models.plans import default_gray_steps
from rollout.selectors import role_of, sees_people
from rollout.services.commands import GATE_DECISIONS


class PhaseSerializer(serializers.ModelSerializer):
    class Meta:
        model = Phase
        fields = ["kind", "planned_start", "planned_end", "actual_start", "actual_end"]


class PlanWorkloadSerializer(serializers.ModelSerializer):
    name = serializers.CharField(source="workload.name")
    criticality = serializers.CharField(source="workload.criticality")
    router = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)

    class Meta:
        model = PlanWorkload
        fields = [
            "id",
            "name",
            "criticality",
            "phase",
            "share",
            "stable_share",
            "router",
            "confirmed_share",
            "confirmed_at",
        ]


class RouterSummarySerializer(serializers.ModelSerializer):
    """A router as plans show it: name and kind (never its address, URL or secret)."""

    class Meta:
        model = TrafficRouter
        fields = ["id", "name", "kind"]


class RouterCallSerializer(serializers.ModelSerializer):
    workload = serializers.CharField(source="plan_workload.workload.name")

    class Meta:
        model = RouterCall
        fields = [
            "id",
            "router_label",
            "workload",
            "operation",
            "step",
            "desired_share",
            "confirmed_share",
            "outcome",
            "answer",
            "idempotency_key",
            "at",
            "confirmed_at",
        ]


class RouterChoiceSerializer(serializers.Serializer):
    """``router``: a router's id, or null for the twin; ``workload``: a plan workload's id
    (that workload's own router; null router: it follows the plan's)."""

    router = serializers.PrimaryKeyRelatedField(
        queryset=TrafficRouter.objects.all(), allow_null=True
    )
    workload = serializers.IntegerField(required=False, allow_null=True, min_value=1)
    expected_version = serializers.IntegerField(required=False, min_value=0)


class PlanSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    source_cluster = serializers.CharField(source="source_cluster.name")
    target_cluster = serializers.CharField(source="target_cluster.name")
    gray_step_percent = serializers.IntegerField(source="current_step_percent", allow_null=True)
    current_gate = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)
    router = RouterSummarySerializer(read_only=True, allow_null=True)

    class Meta:
        model = MigrationPlan
        fields = [
            "id",
            "name",
            "tenant",
            "source_cluster",
            "target_cluster",
            "state",
            "current_phase",
            "gray_steps",
            "gray_step_percent",
            "required_approvals",
            "current_gate",
            "router",
            "version",
            "created_at",
            "updated_at",
        ]


class PlanDetailSerializer(PlanSerializer):
    phases = PhaseSerializer(many=True, read_only=True)
    workloads = PlanWorkloadSerializer(many=True, read_only=True)

    class Meta(PlanSerializer.Meta):
        fields = [*PlanSerializer.Meta.fields, "phases", "workloads"]


class CriterionSerializer(serializers.ModelSerializer):
    description = serializers.CharField(source="describe")

    class Meta:
        model = Criterion
        exclude = ["phase"]


class _PeopleRedacted:
    """Customers see roles, not staff usernames or addresses (``rollout.selectors``)."""

    def _viewer(self):
        request = self.context.get("request")
        return getattr(request, "user", None)


class GateSerializer(_PeopleRedacted, serializers.ModelSerializer):
    phase = serializers.CharField(source="phase.kind")
    label = serializers.CharField()
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    criteria = CriterionSerializer(source="phase.criteria", many=True, read_only=True)

    class Meta:
        model = Gate
        fields = [
            "id",
            "phase",
            "step_index",
            "label",
            "state",
            "revision",
            "requested_by",
            "requested_at",
            "override_of",
            "override_reason",
            "decided_at",
            "criteria",
        ]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if instance.requested_by_id and not sees_people(self._viewer()):
            data["requested_by"] = role_of(instance.requested_by)
        return data


class MeasurementSerializer(serializers.ModelSerializer):
    class Meta:
        model = Measurement
        exclude = ["id", "result"]


class MetricResultSerializer(serializers.ModelSerializer):
    measurements = MeasurementSerializer(many=True, read_only=True)

    class Meta:
        model = MetricResult
        exclude = ["id", "run", "criterion"]


class AnalysisRunSerializer(serializers.ModelSerializer):
    metrics = MetricResultSerializer(many=True, read_only=True)

    class Meta:
        model = AnalysisRun
        fields = [
            "id",
            "gate",
            "gate_revision",
            "status",
            "message",
            "started_at",
            "finished_at",
            "metrics",
        ]


class ApprovalSerializer(_PeopleRedacted, serializers.ModelSerializer):
    class Meta:
        model = Approval
        fields = [
            "id",
            "gate",
            "revision",
            "principal",
            "decision",
            "override",
            "comment",
            "created_at",
        ]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if not sees_people(self._viewer()):
            data["principal"] = role_of(instance.user, instance.principal)
        return data


class AuditEntrySerializer(_PeopleRedacted, serializers.ModelSerializer):
    class Meta:
        model = AuditEntry
        fields = [
            "id",
            "at",
            "actor_label",
            "action",
            "object_type",
            "object_id",
            "plan",
            "from_state",
            "to_state",
            "reason",
            "source_ip",
            "phase",
            "gray_step_percent",
        ]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if not sees_people(self._viewer()):
            data["actor_label"] = role_of(instance.actor, instance.actor_label)
            data["source_ip"] = None
        return data


class CommandSerializer(serializers.Serializer):
    """Body of a command. ``revision`` (the gate revision you saw) is required by approve,
    reject and force-promote; ``reason`` by reject, abort, force-promote and skip;
    ``expected_version`` (the plan version you saw) is checked whenever it is sent."""

    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
    revision = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    expected_version = serializers.IntegerField(required=False, min_value=0, max_value=2**31 - 1)

    def validate(self, attrs: dict) -> dict:
        if self.context.get("command") in GATE_DECISIONS and attrs.get("revision") is None:
            raise serializers.ValidationError(
                {"revision": [_("Name the gate revision you are deciding on.")]}
            )
        return attrs


class OverrideSerializer(CommandSerializer):
    """Body of an override: the reason (why promote past an analysis that did not pass) and the
    gate revision you saw are required."""

    reason = serializers.CharField(max_length=2000)
    revision = serializers.IntegerField(min_value=1, max_value=2**31 - 1)


def command_input(command: str, data: dict) -> dict:
    """Validate a command body with :class:`CommandSerializer` — the one input contract of the
    API, the pages and the admin (lengths, NUL characters, revision, version). Empty form
    fields count as absent. Raises ``serializers.ValidationError``; returns the validated data.
    """
    given = {key: value for key, value in data.items() if value not in (None, "")}
    body = CommandSerializer(data=given, context={"command": command})
    body.is_valid(raise_exception=True)
    return body.validated_data


def command_input_problem(error: serializers.ValidationError) -> str:
    """A refused body as one sentence for a page's message (the API's ``detail``)."""
    return error_body(400, error.detail)["detail"]


class CriterionDraftSerializer(serializers.Serializer):
    """One gate criterion of a new plan.

    A workload criterion names its workload on the target cluster by id (``workload``); a
    name in ``entity_key`` is accepted only when it identifies the plan's tenant's workload
    there, and refused as ambiguous when that name is another tenant's.
    """

    phase = serializers.ChoiceField(choices=PhaseKind.choices)
    name = serializers.SlugField(max_length=80)
    metric = serializers.CharField(max_length=200)
    entity_kind = serializers.CharField(max_length=20, default="workload")
    entity_key = serializers.CharField(max_length=300, required=False, default="")
    workload = serializers.PrimaryKeyRelatedField(
        queryset=Workload.objects.all(), required=False, allow_null=True
    )
    baseline_workload = serializers.PrimaryKeyRelatedField(
        queryset=Workload.objects.all(), required=False, allow_null=True
    )
    aggregation = serializers.ChoiceField(choices=Aggregation.choices)
    comparator = serializers.ChoiceField(choices=Comparator.choices)
    threshold = serializers.FloatField()
    # Left out: derived from the telemetry interval (``analysis_defaults``), like the page's.
    window_seconds = serializers.IntegerField(min_value=10, required=False)
    compare_to_baseline = serializers.BooleanField(default=False)
    baseline_window = serializers.ChoiceField(choices=BaselineWindow.choices, required=False)
    count = serializers.IntegerField(min_value=1, required=False)
    interval_seconds = serializers.IntegerField(min_value=5, required=False)
    min_samples = serializers.IntegerField(min_value=1, required=False)
    initial_delay_seconds = serializers.IntegerField(min_value=0, required=False, allow_null=True)
    inconclusive_limit = serializers.IntegerField(min_value=0, max_value=1000, required=False)
    failure_limit = serializers.IntegerField(min_value=0, max_value=1000, required=False)
    dry_run = serializers.BooleanField(default=False)


class PlanAuthorSerializer(serializers.Serializer):
    """A new draft plan: workloads by id, steps, approvals, analysis settings and criteria.

    Without ``criteria`` every phase gets the template criteria (TTFT/TPOT P99 within each
    inference workload's targets and, in gray and full, against the baseline's over the same
    window; its error rate; training throughput ≥ 0.9 × what the source's figure should give
    on the target's accelerator).
    """

    tenant = serializers.SlugRelatedField(slug_field="slug", queryset=Tenant.objects.all())
    name = serializers.CharField(max_length=200)
    source_cluster = serializers.SlugRelatedField(slug_field="name", queryset=Cluster.objects.all())
    target_cluster = serializers.SlugRelatedField(slug_field="name", queryset=Cluster.objects.all())
    pilot = serializers.PrimaryKeyRelatedField(
        queryset=Workload.objects.all(), many=True, required=False, default=list
    )
    gray = serializers.PrimaryKeyRelatedField(
        queryset=Workload.objects.all(), many=True, required=False, default=list
    )
    gray_steps = serializers.ListField(
        child=serializers.IntegerField(), required=False, default=default_gray_steps
    )
    required_approvals = serializers.IntegerField(min_value=1, max_value=10, default=2)
    interval_seconds = serializers.IntegerField(
        min_value=5, required=False, allow_null=True, default=None
    )
    count = serializers.IntegerField(min_value=1, max_value=1000, default=5)
    criteria = CriterionDraftSerializer(many=True, required=False)
