"""Admin for traffic routers and the log of router calls (read-only: it is evidence).

A webhook router's secret is never in the database: the row names the environment variable
that holds it (``PORTAL_ROUTER_SECRET_…``), so there is nothing to show back. Routers are
saved and deleted through :mod:`rollout.services.routers`, the REST API's path too
(``/api/v1/traffic-routers/``): the same validation and audit either way.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet

from rollout.models import RouterCall, RouterReading, TrafficRouter
from rollout.services.audit import Actor
from rollout.services.errors import WorkflowConflict
from rollout.services.routers import ROUTER_FIELDS, router_create, router_delete, router_update


@admin.register(TrafficRouter)
class TrafficRouterAdmin(admin.ModelAdmin):
    """Routers; a plan or a workload chooses one (through ``rollout.services.routing``)."""

    list_display = ("name", "kind", "haproxy_backend", "webhook_url", "timeout_seconds")
    list_filter = ("kind",)
    fields = ROUTER_FIELDS  # what the service may set, in the order the form shows

    def save_model(self, request, obj: TrafficRouter, form, change: bool) -> None:
        actor = Actor.from_request(request)
        if change:
            changes = {f: getattr(obj, f) for f in form.changed_data if f in ROUTER_FIELDS}
            saved = router_update(router=obj, actor=actor, **changes)
        else:
            saved = router_create(actor=actor, **{f: getattr(obj, f) for f in ROUTER_FIELDS})
        obj.pk, obj.created_at = saved.pk, saved.created_at

    def delete_model(self, request, obj: TrafficRouter) -> None:
        # The admin's own check of the plans' protected references comes first; a plan that
        # chose the router since is refused here, by name.
        try:
            router_delete(router=obj, actor=Actor.from_request(request))
        except WorkflowConflict as exc:
            self.message_user(request, str(exc), messages.ERROR)

    def delete_queryset(self, request, queryset: QuerySet[TrafficRouter]) -> None:
        for router in queryset:
            self.delete_model(request, router)


@admin.register(RouterCall)
class RouterCallAdmin(admin.ModelAdmin):
    """Every call to a router: what was asked, what it read back, what it answered."""

    list_display = (
        "at",
        "plan",
        "router_label",
        "operation",
        "step",
        "desired_share",
        "confirmed_share",
        "outcome",
    )
    list_filter = ("outcome", "operation")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(RouterReading)
class RouterReadingAdmin(admin.ModelAdmin):
    """Each re-read of a router during a step: weights, served split, its own errors."""

    list_display = ("at", "plan_workload", "asked_share", "served_share", "verdict")
    list_filter = ("verdict",)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
