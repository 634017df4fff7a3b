"""Admin for scheduler sources and account mappings (the token is only ever an env-var name)."""

from django.contrib import admin

from scheduling.models import (
    SchedulerAccountMapping,
    SchedulerJob,
    SchedulerQuota,
    SchedulerSource,
)
from scheduling.models_calendar import CalendarApplication, CalendarAuditEntry, CalendarRevision
from scheduling.services.sources import (
    scheduler_account_mapping_create,
    scheduler_account_mapping_delete,
    scheduler_account_mapping_update,
)


@admin.register(SchedulerSource)
class SchedulerSourceAdmin(admin.ModelAdmin):
    list_display = ("cluster", "kind", "base_url", "api_version", "enabled", "last_success_at",
                    "last_error_at")  # fmt: skip
    readonly_fields = ("api_version", "jobs_update_time", "last_success_at", "last_error_at",
                       "last_error", "last_refused")  # fmt: skip


@admin.register(SchedulerAccountMapping)
class SchedulerAccountMappingAdmin(admin.ModelAdmin):
    list_display = ("cluster", "account", "tenant")

    def save_model(self, request, obj, form, change) -> None:
        # Through the services: a new or changed mapping makes the next poll a full one.
        if change:
            scheduler_account_mapping_update(mapping=obj, tenant=obj.tenant)
        else:
            saved = scheduler_account_mapping_create(
                cluster=obj.cluster, account=obj.account, tenant=obj.tenant
            )
            obj.pk = saved.pk

    def delete_model(self, request, obj) -> None:
        scheduler_account_mapping_delete(mapping=obj)


@admin.register(SchedulerJob)
class SchedulerJobAdmin(admin.ModelAdmin):
    list_display = ("source", "job_id", "account", "tenant", "partition", "state", "gpus", "npus")
    list_filter = ("state", "partition")
    readonly_fields = [f.name for f in SchedulerJob._meta.fields]


class _ReadOnly(admin.ModelAdmin):
    """Calendar rows change only through the four-eyes commands (page and API): read here."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(CalendarRevision)
class CalendarRevisionAdmin(_ReadOnly):
    list_display = ("calendar", "number", "state", "day_start", "day_end", "timezone",
                    "requested_by", "decided_by")  # fmt: skip
    list_filter = ("state",)


@admin.register(CalendarApplication)
class CalendarApplicationAdmin(_ReadOnly):
    list_display = ("revision", "outcome", "applied_by", "started_at", "finished_at")
    list_filter = ("outcome",)


@admin.register(CalendarAuditEntry)
class CalendarAuditEntryAdmin(_ReadOnly):
    list_display = ("at", "calendar", "revision", "actor_label", "action")
    list_filter = ("action",)


@admin.register(SchedulerQuota)
class SchedulerQuotaAdmin(_ReadOnly):
    """Quotas are the scheduler's: they change there, and the next sync brings them here."""

    list_display = ("source", "scope", "name", "partition", "origin", "gpus", "npus")
    list_filter = ("scope", "origin")
