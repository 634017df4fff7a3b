"""python manage.py create_user USERNAME --role operator|approver|customer [--role ...]
[--tenant SLUG] [--email ADDRESS] [--password-stdin] [--update]

Production set-up: create a person and give them their roles. Operators and approvers are
staff (no tenant; one person may hold both); a customer belongs to exactly one ``--tenant``.
``--password-stdin`` reads the password from the first line of standard input (kept out of
the process list and shell history); without it the person gets an unusable password until
``manage.py changepassword USERNAME``. Running it again with the same values changes nothing;
different values are refused, naming each difference, unless ``--update``.
"""

import sys

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.management.commands.create_tenant import validation_message
from accounts.models import Tenant
from accounts.services.people import ROLES, person_ensure


class Command(BaseCommand):
    help = "Create a person with their roles (operator, approver, or customer of a tenant)."
    stealth_options = ("stdin",)  # as createsuperuser: tests hand a stream in

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--role", action="append", required=True, choices=ROLES, help="Repeatable."
        )
        parser.add_argument("--tenant", help="Slug of a customer's tenant.")
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--password-stdin", action="store_true", help="Read the password from stdin."
        )
        parser.add_argument("--update", action="store_true", help="Change an existing person.")

    def handle(
        self,
        *args,
        username: str,
        role: list[str],
        tenant: str | None,
        email: str,
        password_stdin: bool,
        update: bool,
        **options,
    ) -> None:
        tenant_obj = None
        if tenant:
            tenant_obj = Tenant.objects.filter(slug=tenant).first()
            if tenant_obj is None:
                known = ", ".join(Tenant.objects.values_list("slug", flat=True)) or "none"
                raise CommandError(f"Unknown tenant {tenant!r}. Known tenants: {known}.")
        password = None
        if password_stdin:
            stdin = options.get("stdin") or sys.stdin
            password = stdin.readline().rstrip("\r\n")
            if not password:
                raise CommandError("--password-stdin: standard input held no password.")
        try:
            done = person_ensure(
                username=username,
                roles=role,
                tenant=tenant_obj,
                email=email,
                password=password,
                update=update,
            )
        except ValidationError as exc:
            raise CommandError(validation_message(exc)) from None
        self.stdout.write(f"user {username} {done.outcome} ({', '.join(sorted(set(role)))})")
        if done.outcome == "created" and password is None:
            self.stderr.write(f"No password set: run manage.py changepassword {username}")
