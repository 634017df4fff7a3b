"""Writes to traffic routers: the one path for the REST API and the admin.

Validation is the model's own (``TrafficRouter.clean`` and its field validators, through
``full_clean``); every write is audited without a plan (the router is the object). A router a
plan or a plan workload still names cannot be deleted: the refusal names those plans.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q
from django.utils.translation import gettext_noop

from rollout.labels import reason_data
from rollout.models import MigrationPlan, TrafficRouter
from rollout.services.audit import Actor, audit_record
from rollout.services.errors import WorkflowConflict

#: What may be set on a router (everything but its id and creation time).
ROUTER_FIELDS = (
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


def _unknown(changes: dict) -> None:
    unknown = set(changes) - set(ROUTER_FIELDS)
    if unknown:
        raise TypeError(f"not a router setting: {sorted(unknown)}")


def _audit(actor: Actor, action: str, router: TrafficRouter, fields: list[str]) -> None:
    # Field names only, never values: the secret's variable name stays out of the trail.
    changed = ", ".join(fields) or "-"
    audit_record(
        actor=actor,
        action=action,
        plan=None,
        obj=router,
        reason=f"{router.name} ({router.kind}): {changed}",
        reason_data=reason_data(
            "router_settings", router=router.name, kind=router.kind, fields=changed
        ),
    )


@transaction.atomic
def router_create(*, actor: Actor, **settings: object) -> TrafficRouter:
    """A new router from ``settings`` (``ROUTER_FIELDS``); ``ValidationError`` names a field."""
    _unknown(settings)
    router = TrafficRouter(**settings)
    router.full_clean()
    router.save()
    _audit(actor, "router_create", router, sorted(settings))
    return router


@transaction.atomic
def router_update(*, router: TrafficRouter, actor: Actor, **changes: object) -> TrafficRouter:
    """Change the given settings; nothing is saved unless the whole router is valid.

    A plan moving traffic through the router sends its next call with the new settings."""
    _unknown(changes)
    locked = TrafficRouter.objects.select_for_update().get(pk=router.pk)
    for name, value in changes.items():
        setattr(locked, name, value)
    locked.full_clean()
    locked.save()
    changed = sorted(n for n, v in changes.items() if getattr(router, n) != v)
    _audit(actor, "router_update", locked, changed)
    return locked


def plans_using(router: TrafficRouter) -> list[MigrationPlan]:
    """Plans that name ``router``, as theirs or one of their workloads'."""
    return list(
        MigrationPlan.objects.filter(Q(router=router) | Q(workloads__router=router))
        .distinct()
        .order_by("name", "pk")
    )


@transaction.atomic
def router_delete(*, router: TrafficRouter, actor: Actor) -> None:
    """Delete a router no plan names; otherwise ``WorkflowConflict`` naming the plans (choose
    another router for them first). Its call log keeps the router's label."""
    locked = TrafficRouter.objects.select_for_update().get(pk=router.pk)
    users = plans_using(locked)
    if users:
        raise WorkflowConflict(
            gettext_noop(
                "router %(router)s is used by %(plans)s: choose another router for them first"
            ),
            router=locked.name,
            plans=", ".join(f"{p.name} (#{p.pk}, {p.state})" for p in users),
        )
    _audit(actor, "router_delete", locked, [])
    locked.delete()
