"""The three role groups and the permissions each carries."""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission

ROLE_OPERATOR = "operator"
ROLE_APPROVER = "approver"
ROLE_CUSTOMER = "customer"

# Approvers see every tenant (they approve every tenant's gates) but do not operate the cluster.
ROLE_PERMISSIONS: dict[str, tuple[str, ...]] = {
    ROLE_OPERATOR: ("view_all_tenants", "operate_cluster"),
    ROLE_APPROVER: ("view_all_tenants", "approve_migrations"),
    ROLE_CUSTOMER: (),
}


# Model permissions for the Django admin (app label → actions → model names), so operators and
# approvers work there without a superuser; customers get none (they never use the admin).
# Approvers only view: they decide gates through the workflow service, never through forms.
ROLE_MODEL_PERMISSIONS: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {
    ROLE_OPERATOR: {
        "inventory": {
            "view": (
                "cluster",
                "supernode",
                "rack",
                "node",
                "accelerator",
                "link",
                "workload",
                "hardwaremodel",
                "topologymapping",
            ),
            "add": (
                "cluster",
                "node",
                "accelerator",
                "link",
                "workload",
                "hardwaremodel",
                "topologymapping",
            ),
            "change": (
                "cluster",
                "node",
                "accelerator",
                "link",
                "workload",
                "hardwaremodel",
                "topologymapping",
            ),
            "delete": ("topologymapping",),
        },
        "telemetry": {
            "view": ("exportertarget", "metricdefinition", "promqldatasource"),
            "add": ("exportertarget", "promqldatasource"),
            "change": ("exportertarget", "promqldatasource"),
            "delete": ("exportertarget", "promqldatasource"),
        },
        "alerts": {
            "view": ("alertrule", "alert"),
            "add": ("alertrule",),
            "change": ("alertrule",),
            "delete": ("alertrule",),
        },
        "rollout": {
            "view": (
                "migrationplan",
                "phase",
                "planworkload",
                "criterion",
                "gate",
                "analysisrun",
                "approval",
                "auditentry",
                "deniedattemptcount",
                "webhooksubscription",
                "webhookdelivery",
                "trafficrouter",
                "routercall",
            ),
            "add": ("migrationplan", "planworkload", "criterion", "trafficrouter"),
            "change": ("migrationplan", "phase", "planworkload", "criterion", "trafficrouter"),
            "delete": ("planworkload", "criterion"),
        },
        "simulation": {
            "view": ("twinrun",),
            "add": ("twinrun",),
            "change": ("twinrun",),
        },
    },
    ROLE_APPROVER: {
        "rollout": {
            "view": (
                "migrationplan",
                "phase",
                "planworkload",
                "criterion",
                "gate",
                "analysisrun",
                "approval",
                "auditentry",
            ),
        },
    },
    ROLE_CUSTOMER: {},
}


def _model_permissions(role: str) -> list[Permission]:
    wanted = [
        (app, f"{action}_{model}")
        for app, actions in ROLE_MODEL_PERMISSIONS[role].items()
        for action, models in actions.items()
        for model in models
    ]
    by_key = {
        (p.content_type.app_label, p.codename): p
        for p in Permission.objects.filter(
            content_type__app_label__in={app for app, _ in wanted}
        ).select_related("content_type")
    }
    return [by_key[key] for key in wanted if key in by_key]


def roles_ensure() -> dict[str, Group]:
    """Create the role groups and (re)attach their permissions; safe to run repeatedly."""
    groups: dict[str, Group] = {}
    for role, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        permissions = Permission.objects.filter(
            content_type__app_label="monitoring", codename__in=codenames
        )
        group.permissions.set([*permissions, *_model_permissions(role)])
        groups[role] = group
    return groups


def roles_ensure_after_migrate(**_: object) -> None:
    roles_ensure()
