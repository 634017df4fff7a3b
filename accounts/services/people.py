"""Production set-up: tenants and people with their roles, as the set-up commands create them.

Each write is an *ensure*: a second identical run changes nothing and says so; a run that would
change an existing row refuses, naming each difference, unless asked to ``update``. Bad input is a
``ValidationError`` naming the field, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from accounts.models import Tenant, User
from accounts.services.roles import ROLE_APPROVER, ROLE_CUSTOMER, ROLE_OPERATOR, roles_ensure

STAFF_ROLES = (ROLE_OPERATOR, ROLE_APPROVER)
ROLES = (*STAFF_ROLES, ROLE_CUSTOMER)

CREATED, UNCHANGED, UPDATED = "created", "unchanged", "updated"


@dataclass(frozen=True)
class Ensured:
    """What an ensure did: the row, ``created``/``unchanged``/``updated``, and what changed."""

    obj: object
    outcome: str
    changes: list[str] = field(default_factory=list)


def _differences(obj: object, wanted: dict[str, object]) -> list[str]:
    return [
        f"{name}: {getattr(obj, name)!r} → {value!r}"
        for name, value in wanted.items()
        if getattr(obj, name) != value
    ]


def _refuse_changes(kind: str, key: str, changes: list[str]) -> None:
    raise ValidationError(
        _("%(kind)s %(key)s exists and differs (%(changes)s); pass update to change it.")
        % {"kind": kind, "key": key, "changes": "; ".join(changes)},
        code="exists",
    )


@transaction.atomic
def tenant_ensure(*, slug: str, name: str, update: bool = False) -> Ensured:
    """Create the tenant ``slug`` named ``name``, or leave it as it is when it already matches."""
    tenant = Tenant.objects.select_for_update().filter(slug=slug).first()
    wanted = {"name": name}
    if tenant is None:
        tenant = Tenant(slug=slug, name=name)
        tenant.full_clean()
        tenant.save()
        return Ensured(tenant, CREATED)
    changes = _differences(tenant, wanted)
    if not changes:
        return Ensured(tenant, UNCHANGED)
    if not update:
        _refuse_changes(_("Tenant"), slug, changes)
    tenant.name = name
    tenant.full_clean()
    tenant.save()
    return Ensured(tenant, UPDATED, changes)


def _check_roles(roles: Sequence[str], tenant: Tenant | None) -> list[str]:
    roles = sorted(set(roles))
    unknown = [r for r in roles if r not in ROLES]
    if unknown or not roles:
        raise ValidationError(
            {
                "roles": _("Give one or more roles of %(roles)s (got %(got)s).")
                % {"roles": ", ".join(ROLES), "got": ", ".join(unknown) or _("none")}
            }
        )
    if ROLE_CUSTOMER in roles:
        if len(roles) > 1:
            raise ValidationError(
                {"roles": _("A customer holds no staff role: customers see only their tenant.")}
            )
        if tenant is None:
            raise ValidationError({"tenant": _("A customer belongs to a tenant: name it.")})
    elif tenant is not None:
        raise ValidationError(
            {"tenant": _("Operators and approvers are staff and belong to no tenant.")}
        )
    return roles


@transaction.atomic
def person_ensure(
    *,
    username: str,
    roles: Sequence[str],
    tenant: Tenant | None = None,
    email: str = "",
    password: str | None = None,
    update: bool = False,
) -> Ensured:
    """Create the login ``username`` holding ``roles`` (operator and/or approver, or customer
    of ``tenant``), or leave it when it already matches.

    Without a password a new person gets an unusable one (``manage.py changepassword`` sets it);
    a password given is checked by the configured validators and set only when it differs.
    Changing roles of an existing person revokes the tokens they no longer back (as any group
    change does).
    """
    roles = _check_roles(roles, tenant)
    groups = roles_ensure()
    wanted: dict[str, object] = {
        "is_staff": ROLE_CUSTOMER not in roles,
        "tenant": tenant,
        "email": email,
        "is_active": True,
    }
    user = User.objects.select_for_update().filter(username=username).first()
    if user is None:
        user = User(username=username, **wanted)
        if password is not None:
            validate_password(password, user)
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.full_clean()
        user.save()
        user.groups.set([groups[r] for r in roles])
        return Ensured(user, CREATED)
    changes = _differences(user, wanted)
    held = sorted(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
    if held != roles:
        changes.append(f"roles: {held!r} → {roles!r}")
    if password is not None and not user.check_password(password):
        changes.append("password")
    if not changes:
        return Ensured(user, UNCHANGED)
    if not update:
        _refuse_changes(_("User"), username, changes)
    for name, value in wanted.items():
        setattr(user, name, value)
    if password is not None:
        validate_password(password, user)
        user.set_password(password)
    user.full_clean()
    user.save()
    others = list(user.groups.exclude(name__in=ROLES))
    user.groups.set([*others, *(groups[r] for r in roles)])
    return Ensured(user, UPDATED, changes)
