"""Whether a viewer sees people, and the role shown instead when they do not.

Staff see who did what and from where; customers (and tenant-bound tokens) see roles only —
"operator", "approver", "administrator" — never a staff username or a source address. Every
place that shows a person to a possibly-customer viewer (migration audit and approvals, alert
acknowledgements, token lists, tenant webhook payloads) asks these two functions.
"""

from __future__ import annotations

from django.utils.translation import gettext as _


def sees_people(viewer) -> bool:
    """Staff see who did what and from where; customers see roles only (never staff usernames
    or source addresses)."""
    return bool(getattr(viewer, "sees_all_tenants", False)) and not getattr(
        viewer, "is_customer", False
    )


def role_of(user, label: str = "") -> str:
    """The role a customer is shown instead of a person: approver, operator, system…"""
    if user is None:
        return _("system") if label in ("", "system") else _("integration")
    if user.is_superuser:
        return _("administrator")
    if user.has_perm("monitoring.approve_migrations"):
        return _("approver")
    if user.has_perm("monitoring.operate_cluster"):
        return _("operator")
    if getattr(user, "tenant_id", None) is not None:
        return _("customer")
    return _("staff")


def person_shown(viewer, user, label: str = "") -> str:
    """``user`` as ``viewer`` may see them: the username for staff, and for customers their
    own tenant's people by name, everyone else (staff) by role."""
    if user is None:
        return role_of(None, label) if not sees_people(viewer) else (label or _("system"))
    if sees_people(viewer):
        return user.username
    viewer_tenant = getattr(viewer, "tenant_id", None)
    if viewer_tenant is not None and getattr(user, "tenant_id", None) == viewer_tenant:
        return user.username
    return role_of(user, label)
