"""Admin registrations for tenancy, tokens, heartbeats and exporter targets."""

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.utils.translation import gettext_lazy as _

from monitoring.models import (
    Accelerator,
    Alert,
    AlertRule,
    Cluster,
    CostAssumptions,
    ExporterTarget,
    HardwareModel,
    Heartbeat,
    IntegrationToken,
    Link,
    MetricDefinition,
    Node,
    Rack,
    Supernode,
    Tenant,
    User,
    Workload,
)
from monitoring.services.tokens import token_revoke
from monitoring.telemetry.scrape import exporter_scrape


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    list_display = ("username", "tenant", "is_staff", "is_superuser", "is_active")
    list_filter = ("tenant", "is_staff", "groups")
    fieldsets = (*DjangoUserAdmin.fieldsets, (_("Tenancy"), {"fields": ("tenant",)}))
    add_fieldsets = (*DjangoUserAdmin.add_fieldsets, (_("Tenancy"), {"fields": ("tenant",)}))


@admin.register(IntegrationToken)
class IntegrationTokenAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "prefix",
        "tenant",
        "scopes",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = ("tenant",)
    readonly_fields = ("prefix", "secret_hash", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke_tokens"]

    def has_add_permission(self, request) -> bool:
        # The plaintext can only be shown once, which the admin form cannot do safely:
        # tokens are issued with `manage.py create_integration_token`.
        return False

    @admin.action(description=_("Revoke selected tokens"))
    def revoke_tokens(self, request, queryset) -> None:
        count = 0
        for token in queryset.filter(revoked_at__isnull=True):
            token_revoke(token=token)
            count += 1
        self.message_user(
            request, _("%(count)d token(s) revoked.") % {"count": count}, messages.SUCCESS
        )


@admin.register(Heartbeat)
class HeartbeatAdmin(admin.ModelAdmin):
    list_display = ("kind", "name", "last_seen", "beats")
    readonly_fields = ("kind", "name", "first_seen", "last_seen", "beats")

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ExporterTarget)
class ExporterTargetAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "cluster",
        "url",
        "kind",
        "enabled",
        "interval_seconds",
        "last_success_at",
        "last_error_at",
        "last_error",
        "consecutive_failures",
    )
    list_filter = ("cluster", "kind", "enabled")
    search_fields = ("name", "url", "node")
    # The scrape owns these; editing them by hand would only make the operator page lie.
    readonly_fields = (
        "last_attempt_at",
        "last_success_at",
        "last_error_at",
        "last_error",
        "last_counts",
        "consecutive_failures",
    )
    actions = ["scrape_now"]

    @admin.action(description=_("Scrape now"))
    def scrape_now(self, request, queryset) -> None:
        # Synchronous on purpose: the operator wants to see the outcome of a fix right away.
        # Each scrape is bounded by the target's timeout (at most 60 s).
        for target in queryset.select_related("cluster"):
            result = exporter_scrape(target=target)
            if result["ok"]:
                counts = result["counts"]
                self.message_user(
                    request,
                    _(
                        "%(name)s: scraped in %(seconds).2f s; %(accepted)d samples accepted "
                        "(%(mapped)d mapped, %(unmapped)d kept unmapped), %(dropped)d dropped."
                    )
                    % {
                        "name": target.name,
                        "seconds": result["duration_seconds"],
                        "accepted": counts.get("accepted", 0),
                        "mapped": counts.get("mapped", 0),
                        "unmapped": counts.get("unmapped_kept", 0),
                        "dropped": sum(counts.get("dropped", {}).values()),
                    },
                    messages.SUCCESS,
                )
            else:
                self.message_user(
                    request,
                    _("%(name)s: scrape failed: %(error)s")
                    % {"name": target.name, "error": result["error"]},
                    messages.ERROR,
                )


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


@admin.register(HardwareModel)
class HardwareModelAdmin(admin.ModelAdmin):
    """Seeded from the twin's catalogue (DESIGN.md figures); operators correct figures here."""

    list_display = (
        "slug",
        "name",
        "vendor",
        "hbm_bytes",
        "hbm_bandwidth_bytes_per_s",
        "peak_flops",
        "tdp_watts",
        "confidence",
    )
    list_filter = ("vendor", "confidence")


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "hardware_model", "created_at")
    list_filter = ("kind",)


@admin.register(Supernode)
class SupernodeAdmin(admin.ModelAdmin):
    list_display = ("name", "cluster")
    list_filter = ("cluster",)


@admin.register(Rack)
class RackAdmin(admin.ModelAdmin):
    list_display = ("name", "supernode")
    list_filter = ("supernode__cluster",)


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ("hostname", "cluster", "rack", "registered_by_exporter")
    list_filter = ("cluster", "registered_by_exporter")
    search_fields = ("hostname",)
    raw_id_fields = ("rack",)


@admin.register(Accelerator)
class AcceleratorAdmin(admin.ModelAdmin):
    list_display = ("__str__", "vendor_id", "model_name", "hardware_model", "health")
    list_filter = ("health", "hardware_model", "node__cluster")
    search_fields = ("vendor_id", "node__hostname")
    raw_id_fields = ("node",)


@admin.register(Link)
class LinkAdmin(admin.ModelAdmin):
    list_display = ("key", "cluster", "kind", "endpoint_a", "endpoint_b", "status")
    list_filter = ("cluster", "kind", "status")
    search_fields = ("key",)


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ("name", "tenant", "cluster", "kind", "criticality", "slo_p99_ms")
    list_filter = ("cluster", "tenant", "kind", "criticality")
    search_fields = ("name",)


@admin.register(MetricDefinition)
class MetricDefinitionAdmin(admin.ModelAdmin):
    list_display = ("name", "unit", "entity_kind", "type", "mapped")
    list_filter = ("entity_kind", "mapped")
    search_fields = ("name", "description")


@admin.register(CostAssumptions)
class CostAssumptionsAdmin(admin.ModelAdmin):
    """Cost inputs; validation is the model's, the same as the cost page's form."""

    list_display = (
        "__str__",
        "currency",
        "card_price",
        "amortisation_years",
        "electricity_price_per_kwh",
        "pue",
        "is_assumption",
        "updated_at",
    )
