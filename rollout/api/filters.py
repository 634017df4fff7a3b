"""django-filter filtersets of the migration API: one declaration gives validation (400 naming
the parameter), the query and the OpenAPI parameters."""

from __future__ import annotations

import django_filters

from cluster_portal.web.times import InstantFilter
from rollout.models import AnalysisRun, AuditEntry, MigrationPlan, PlanState


class PlanFilter(django_filters.FilterSet):
    state = django_filters.ChoiceFilter(choices=PlanState.choices)
    tenant = django_filters.CharFilter(field_name="tenant__slug", help_text="Tenant slug.")
    target_cluster = django_filters.CharFilter(
        field_name="target_cluster__name", help_text="Target cluster name."
    )

    class Meta:
        model = MigrationPlan
        fields = ["state", "tenant", "target_cluster"]


class AuditFilter(django_filters.FilterSet):
    plan = django_filters.NumberFilter(field_name="plan_id", help_text="Plan id.")
    action = django_filters.CharFilter(help_text="e.g. plan.start, gate.approve.")
    actor = django_filters.CharFilter(field_name="actor_label", help_text="Who acted.")
    since = InstantFilter(
        field_name="at", lookup_expr="gte", help_text="ISO 8601 time (UTC offsets up to ±15:59)."
    )

    class Meta:
        model = AuditEntry
        fields = ["plan", "action", "actor", "since"]


class AnalysisRunFilter(django_filters.FilterSet):
    gate = django_filters.NumberFilter(field_name="gate_id", help_text="Gate id.")

    class Meta:
        model = AnalysisRun
        fields = ["gate"]
