"""The test tenants and one user per role, as plain builders: the ``tenants`` and ``users``
fixtures call them, and so do module-scoped worlds (the API fuzzing builds one per module)."""

from __future__ import annotations

PASSWORD = "correct-horse-battery-staple"


def make_tenants() -> dict:
    """The two test tenants, ``acme`` and ``panda`` (the fixture and module-scoped worlds)."""
    from accounts.models import Tenant

    return {
        "acme": Tenant.objects.create(slug="acme", name="Acme Robotics"),
        "panda": Tenant.objects.create(slug="panda", name="Panda Speech Cloud"),
    }


def make_users(tenants: dict) -> dict:
    """One user per role: ``operator``, ``approver``, ``customer`` (acme), ``other_customer``."""
    from accounts.models import User
    from accounts.services.roles import (
        ROLE_APPROVER,
        ROLE_CUSTOMER,
        ROLE_OPERATOR,
        roles_ensure,
    )

    groups = roles_ensure()

    def make(username: str, role: str, **attrs) -> User:
        user = User.objects.create_user(username=username, password=PASSWORD, **attrs)
        user.groups.add(groups[role])
        return user

    return {
        "operator": make("op", ROLE_OPERATOR, is_staff=True),
        "approver": make("appr", ROLE_APPROVER, is_staff=True),
        "customer": make("cust-acme", ROLE_CUSTOMER, tenant=tenants["acme"]),
        "other_customer": make("cust-panda", ROLE_CUSTOMER, tenant=tenants["panda"]),
    }
