"""Read serializers for plans, phases, gates, analysis runs, approvals and audit rows."""

from __future__ import annotations

from django.utils.translation import gettext as _
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
from rollout.selectors import role_of, sees_people
from rollout.services.commands import GATE_DECISIONS


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
        fields = ["id", "gate", "revision", "principal", "decision", "comment", "created_at"]

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
