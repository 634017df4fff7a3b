"""Read serializers for plans, phases, gates, analysis runs, approvals and audit rows."""

from __future__ import annotations

from rest_framework import serializers

from rollout.models import (
    AnalysisRun,
    Approval,
    AuditEntry,
    Criterion,
    Gate,
    Measurement,
    MetricResult,
    MigrationPlan,
    Phase,
    PlanWorkload,
)


class PhaseSerializer(serializers.ModelSerializer):
    class Meta:
        model = Phase
        fields = ["kind", "planned_start", "planned_end", "actual_start", "actual_end"]


class PlanWorkloadSerializer(serializers.ModelSerializer):
    name = serializers.CharField(source="workload.name")
    criticality = serializers.CharField(source="workload.criticality")

    class Meta:
        model = PlanWorkload
        fields = ["name", "criticality", "phase", "share", "stable_share"]


class PlanSerializer(serializers.ModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    source_cluster = serializers.CharField(source="source_cluster.name")
    target_cluster = serializers.CharField(source="target_cluster.name")
    gray_step_percent = serializers.IntegerField(source="current_step_percent", allow_null=True)
    current_gate = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)

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


class GateSerializer(serializers.ModelSerializer):
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
            "decided_at",
            "criteria",
        ]


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


class ApprovalSerializer(serializers.ModelSerializer):
    class Meta:
        model = Approval
        fields = ["id", "gate", "revision", "principal", "decision", "comment", "created_at"]


class AuditEntrySerializer(serializers.ModelSerializer):
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
        ]


class CommandSerializer(serializers.Serializer):
    """Body of a command: all optional; ``reason`` is required by reject, abort, force, skip."""

    reason = serializers.CharField(required=False, allow_blank=True, default="")
    comment = serializers.CharField(required=False, allow_blank=True, default="")
    revision = serializers.IntegerField(required=False, min_value=1)
    expected_version = serializers.IntegerField(required=False, min_value=0)
