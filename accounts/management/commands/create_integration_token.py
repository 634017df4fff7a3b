"""python manage.py create_integration_token --name NAME --scope ingest [--tenant SLUG]
[--owner USERNAME] [--expires 90d|2027-03-31|2027-03-31T12:00+08:00]

An ``approve`` token needs an owner who holds the approver permission. ``--expires`` takes a
lifetime (``30m``, ``12h``, ``90d``, ``8w``) or an ISO 8601 date or date-time (a date means its
midnight, a time without offset the server's time zone); past it the token answers 401.
"""

import re
from datetime import datetime, time, timedelta

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from accounts.api.permissions import principal_has_scope
from accounts.models import Tenant, User
from accounts.models.tokens import TOKEN_SCOPES
from accounts.services.tokens import token_create


class Command(BaseCommand):
    help = "Create an integration API token and print it once (only its hash is stored)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--name", required=True, help="What the token is for.")
        parser.add_argument(
            "--scope",
            action="append",
            required=True,
            choices=TOKEN_SCOPES,
            help="Repeat for several scopes.",
        )
        parser.add_argument("--tenant", help="Slug of the tenant the token is limited to.")
        parser.add_argument(
            "--expires",
            help="Lifetime (30m, 12h, 90d, 8w) or ISO 8601 date/date-time; default: no expiry.",
        )
        parser.add_argument(
            "--owner",
            help="Username of the person the token acts for (required for the approve scope; "
            "the token can never do more than that person).",
        )

    def handle(
        self,
        *args,
        name: str,
        scope: list[str],
        tenant: str | None,
        owner: str | None = None,
        expires: str | None = None,
        **options,
    ) -> None:
        expires_at = parse_expiry(expires) if expires else None
        owner_obj = None
        if owner:
            owner_obj = User.objects.filter(username=owner, is_active=True).first()
            if owner_obj is None:
                raise CommandError(f"Unknown or inactive user {owner!r}.")
        for wanted in scope:
            if owner_obj is not None and not principal_has_scope(owner_obj, wanted):
                raise CommandError(f"{owner} does not hold the {wanted!r} scope.")
        if "approve" in scope and owner_obj is None:
            raise CommandError(
                "An approve token acts for an approver: name them with --owner USERNAME."
            )
        tenant_obj = None
        if tenant:
            tenant_obj = Tenant.objects.filter(slug=tenant).first()
            if tenant_obj is None:
                known = ", ".join(Tenant.objects.values_list("slug", flat=True)) or "none"
                raise CommandError(f"Unknown tenant {tenant!r}. Known tenants: {known}.")
        try:
            issued = token_create(
                name=name, scopes=scope, tenant=tenant_obj, owner=owner_obj, expires_at=expires_at
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stderr.write(
            f"Token {issued.token.prefix} created (scopes: {', '.join(issued.token.scopes)}"
            f"{', tenant: ' + tenant if tenant else ''}"
            f"{', expires ' + expires_at.isoformat() if expires_at else ''}"
            "). It is shown once; store it now:"
        )
        self.stdout.write(issued.plaintext)


_LIFETIME = re.compile(r"(\d{1,6})\s*([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_expiry(text: str, *, now: datetime | None = None) -> datetime:
    """``90d`` → now + 90 days; ``2027-03-31`` → that midnight; an ISO date-time as given."""
    now = now or timezone.now()
    text = text.strip()
    lifetime = _LIFETIME.fullmatch(text.lower())
    if lifetime:
        return now + timedelta(**{_UNITS[lifetime[2]]: int(lifetime[1])})
    try:
        moment = parse_datetime(text)
        if moment is None:
            day = parse_date(text)
            moment = datetime.combine(day, time()) if day is not None else None
    except ValueError:
        moment = None  # well-formed but impossible (month 13, offset +25:00)
    if moment is None:
        raise CommandError(
            f"--expires {text!r}: give a lifetime (30m, 12h, 90d, 8w) or an ISO 8601 date "
            "or date-time (2027-03-31, 2027-03-31T12:00+08:00)."
        )
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment
