"""Demo data: tenants and the users of every role. Idempotent: a second run changes nothing."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction

from accounts.models import Tenant, User
from accounts.services.roles import ROLE_APPROVER, ROLE_CUSTOMER, ROLE_OPERATOR, roles_ensure

DEMO_TENANTS: tuple[tuple[str, str], ...] = (
    ("acme-bank", "Acme Bank"),
    ("zhiyuan-ai", "Zhiyuan AI"),
)

# (username, role, is_superuser); customers are added per tenant.
DEMO_STAFF: tuple[tuple[str, str | None, bool], ...] = (
    ("admin", None, True),
    ("operator", ROLE_OPERATOR, False),
    ("approver1", ROLE_APPROVER, False),
    ("approver2", ROLE_APPROVER, False),
)


@dataclass
class DemoSeedResult:
    password: str
    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)


def demo_password(explicit: str | None) -> str:
    """The demo password: ``explicit`` if given, else one generated once and kept under var/.

    The chosen password is kept in ``var/demo_password`` (demo only) so ``make demo`` can print
    the logins on every start.
    """
    path = Path(settings.VAR_DIR) / "demo_password"
    if not explicit and path.exists():
        return path.read_text().strip()
    password = explicit or secrets.token_urlsafe(9)
    path.write_text(password)
    path.chmod(0o600)
    return password


def _ensure_user(*, username: str, password: str, result: DemoSeedResult, **attrs: object) -> User:
    user, created = User.objects.get_or_create(username=username, defaults=attrs)
    changed = created
    for name, value in attrs.items():
        if getattr(user, name) != value:
            setattr(user, name, value)
            changed = True
    # set_password re-salts, so only call it when the password really differs.
    if not user.check_password(password):
        user.set_password(password)
        changed = True
    if changed:
        user.save()
    (result.created if changed else result.unchanged).append(username)
    return user


@transaction.atomic
def demo_seed(*, password: str | None = None) -> DemoSeedResult:
    groups = roles_ensure()
    result = DemoSeedResult(password=demo_password(password))
    for username, role, superuser in DEMO_STAFF:
        user = _ensure_user(
            username=username,
            password=result.password,
            result=result,
            is_staff=True,
            is_superuser=superuser,
            tenant=None,
        )
        if role:
            user.groups.add(groups[role])
        result.logins.append((username, role or "admin"))
    for slug, name in DEMO_TENANTS:
        tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": name})
        username = f"customer-{slug}"
        user = _ensure_user(
            username=username,
            password=result.password,
            result=result,
            is_staff=False,
            is_superuser=False,
            tenant=tenant,
        )
        user.groups.add(groups[ROLE_CUSTOMER])
        result.logins.append((username, f"customer of {name}"))
    return result
