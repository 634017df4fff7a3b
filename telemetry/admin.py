"""Admin registrations for the metric catalogue, exporter targets and heartbeats."""

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from telemetry.catalogue.serving_bindings import serving_binding_create, serving_binding_delete
from telemetry.catalogue.vouching import evidence_source_approve, evidence_source_authored
from telemetry.models import (
    ExporterTarget,
    Heartbeat,
    MetricDefinition,
    PromQLDataSource,
    RemoteWriteStatus,
    ServingBinding,
)
from telemetry.read.promql.client import DataSourceUnavailable
from telemetry.receivers.promql_sync import promql_source_sync
from telemetry.receivers.scrape import exporter_scrape


class _VouchedAdmin(admin.ModelAdmin):
    """Who made a writer a gate could count, and the approve action (four eyes on evidence)."""

    vouch_fields = ("created_by", "created_at", "approved_by", "approved_at")

    def get_readonly_fields(self, request, obj=None):
        return (*super().get_readonly_fields(request, obj), *self.vouch_fields)

    def save_model(self, request, obj, form, change) -> None:
        # Creating or changing it makes this operator its author; an approval lapses.
        evidence_source_authored(source=obj, user_id=request.user.pk)
        super().save_model(request, obj, form, change)

    @admin.action(description=_("Approve as gate evidence (another operator's)"))
    def approve_evidence(self, request, queryset) -> None:
        for source in queryset:
            try:
                evidence_source_approve(source=source, user_id=request.user.pk)
            except ValidationError as exc:
                self.message_user(request, f"{source}: {exc.messages[0]}", messages.ERROR)
            else:
                self.message_user(request, _("%(name)s: approved as evidence.") % {"name": source})


@admin.register(Heartbeat)
class HeartbeatAdmin(admin.ModelAdmin):
    list_display = ("kind", "name", "last_seen", "beats")
    readonly_fields = ("kind", "name", "first_seen", "last_seen", "beats")

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ExporterTarget)
class ExporterTargetAdmin(_VouchedAdmin):
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
        "created_by",
        "approved_by",
    )
    list_filter = ("cluster", "kind", "enabled")
    search_fields = ("name", "url", "node")
    # The scrape owns these; editing them by hand would only make the operator page lie.
    readonly_fields = (
        "last_attempt_at",
        "scrape_lease_until",
        "last_success_at",
        "last_error_at",
        "last_error",
        "last_counts",
        "consecutive_failures",
    )
    actions = ["scrape_now", "approve_evidence"]

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


@admin.register(MetricDefinition)
class MetricDefinitionAdmin(admin.ModelAdmin):
    list_display = ("name", "unit", "entity_kind", "type", "mapped")
    list_filter = ("entity_kind", "mapped")
    search_fields = ("name", "description")


@admin.register(PromQLDataSource)
class PromQLDataSourceAdmin(_VouchedAdmin):
    list_display = ("cluster", "url", "enabled", "last_success_at", "last_error_at", "last_error",
                    "created_by", "approved_by")  # fmt: skip
    readonly_fields = ("last_success_at", "last_error_at", "last_error")
    actions = ["sync_inventory", "approve_evidence"]

    @admin.action(description=_("Register the nodes and cards the server reports"))
    def sync_inventory(self, request, queryset) -> None:
        for source in queryset.select_related("cluster"):
            try:
                result = promql_source_sync(source=source)
            except DataSourceUnavailable as exc:
                self.message_user(request, str(exc), messages.ERROR)
                continue
            self.message_user(
                request,
                _("%(cluster)s: %(cards)d cards reported, %(held)d held by a pod or job")
                % {"cluster": source.cluster, "cards": result.cards, "held": result.held},
            )


@admin.register(RemoteWriteStatus)
class RemoteWriteStatusAdmin(admin.ModelAdmin):
    list_display = ("cluster", "requests", "rejected", "samples", "inserted", "duplicates",
                    "dropped", "last_seen_at", "last_error")  # fmt: skip
    readonly_fields = [f.name for f in RemoteWriteStatus._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ServingBinding)
class ServingBindingAdmin(_VouchedAdmin):
    """Which serving endpoints (model, instance or pod) a workload is, for gates and pages."""

    list_display = ("workload", "model_name", "instance", "created_by", "approved_by")
    actions = ["approve_evidence"]
    search_fields = ("workload__name", "model_name", "instance")
    raw_id_fields = ("workload",)

    def get_readonly_fields(self, request, obj=None):
        # A binding is created or deleted, never edited: the page and API do the same.
        fixed = ("workload", "model_name", "instance") if obj is not None else ()
        return (*fixed, *self.vouch_fields)

    def save_model(self, request, obj, form, change) -> None:
        if not change:
            saved = serving_binding_create(
                workload_id=obj.workload_id,
                model_name=obj.model_name,
                instance=obj.instance,
                created_by_id=request.user.pk,
            )
            obj.pk, obj._state.adding, obj._state.db = saved.pk, False, saved._state.db

    def delete_model(self, request, obj) -> None:
        serving_binding_delete(binding_id=obj.pk)

    def delete_queryset(self, request, queryset) -> None:
        for pk in queryset.values_list("pk", flat=True):
            serving_binding_delete(binding_id=pk)
