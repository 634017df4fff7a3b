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


def roles_ensure() -> dict[str, Group]:
    """Create the role groups and (re)attach their permissions; safe to run repeatedly."""
    groups: dict[str, Group] = {}
    for role, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        permissions = Permission.objects.filter(
            content_type__app_label="monitoring", codename__in=codenames
        )
        group.permissions.set(permissions)
        groups[role] = group
    return groups


def roles_ensure_after_migrate(**_: object) -> None:
    roles_ensure()
