"""Admin for traffic routers and the log of router calls (read-only: it is evidence).

A webhook router's secret is never in the database: the row names the environment variable
that holds it (``PORTAL_ROUTER_SECRET_…``), so there is nothing to show back.
"""

from __future__ import annotations

from django.contrib import admin

from rollout.models import RouterCall, RouterReading, TrafficRouter


@admin.register(TrafficRouter)
class TrafficRouterAdmin(admin.ModelAdmin):
    """Routers; a plan or a workload chooses one (through ``rollout.services.routing``)."""

    list_display = ("name", "kind", "haproxy_backend", "webhook_url", "timeout_seconds")
    list_filter = ("kind",)
    fields = (
        "name",
        "kind",
        "haproxy_address",
        "haproxy_backend",
        "haproxy_source_server",
        "haproxy_target_server",
        "webhook_url",
        "webhook_secret_ref",
        "timeout_seconds",
        "max_attempts",
        "confirm_within_seconds",
        "split_tolerance_points",
        "split_window_seconds",
        "split_min_requests",
    )


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
