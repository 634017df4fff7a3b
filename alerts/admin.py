"""Admin registrations for alert rules and alerts."""

from django.contrib import admin

from alerts.models import Alert, AlertRule


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    """Operators tune thresholds, windows, severity and on/off here; re-seeding keeps them."""

    list_display = (
        "name",
        "metric",
        "entity_kind",
        "aggregation",
        "comparator",
        "threshold",
        "window_seconds",
        "severity",
        "enabled",
    )
    list_editable = ("threshold", "window_seconds", "severity", "enabled")
    list_filter = ("severity", "entity_kind", "enabled")
    search_fields = ("name", "title", "metric")


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = ("rule", "entity", "severity", "state", "value", "first_seen", "last_seen")
    list_filter = ("state", "severity", "rule")
    readonly_fields = (
        "rule",
        "entity",
        "tenant",
        "severity",
        "value",
        "message",
        "first_seen",
        "last_seen",
        "acknowledged_by",
        "acknowledged_at",
        "resolved_by",
        "resolved_at",
        "state",
    )

    def has_add_permission(self, request) -> bool:
        return False  # alerts come from evaluation; triage happens on the alerts page


# --- inventory ------------------------------------------------------------------------------
