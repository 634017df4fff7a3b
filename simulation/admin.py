"""Admin for twin runs: pause, resume and speed."""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from simulation.models import CatalogModel, TwinRun, TwinTick
from simulation.services.runs import twin_run_control


@admin.register(TwinRun)
class TwinRunAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "cluster",
        "status",
        "steps_per_tick",
        "tick_seq",
        "sim_time",
        "last_tick_at",
        "last_tick_ms",
    )
    fields = (
        "name",
        "cluster",
        "status",
        "steps_per_tick",
        "tick_seq",
        "sim_time",
        "last_tick_at",
        "last_tick_ms",
    )
    readonly_fields = ("name", "cluster", "tick_seq", "sim_time", "last_tick_at", "last_tick_ms")
    actions = ["pause", "resume"]

    def has_add_permission(self, request) -> bool:
        return False  # runs are created with `manage.py seed_twin` (they build inventory)

    @admin.action(description=_("Pause selected runs"))
    def pause(self, request, queryset) -> None:
        # Through the service: a paused run shows as paused (not down) and stops lagging.
        for pk in queryset.values_list("pk", flat=True):
            twin_run_control(run_id=pk, action="pause")

    @admin.action(description=_("Resume selected runs"))
    def resume(self, request, queryset) -> None:
        for pk in queryset.values_list("pk", flat=True):
            twin_run_control(run_id=pk, action="start")


@admin.register(TwinTick)
class TwinTickAdmin(admin.ModelAdmin):
    list_display = ("run", "seq", "sim_time", "samples", "duration_ms", "committed_at")
    list_filter = ("run",)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(CatalogModel)
class CatalogModelAdmin(admin.ModelAdmin):
    """Day-0 models are added on the operator page (/whatif/models/), which validates the
    config.json through the engine; here they can be inspected or removed."""

    list_display = ("model_id", "name", "created_by", "created_at")
    readonly_fields = ("model_id", "name", "config", "spec", "created_by", "created_at")

    def has_add_permission(self, request) -> bool:
        return False
