"""python manage.py create_integration_token --name NAME --scope ingest [--tenant SLUG]
[--owner USERNAME]  (an ``approve`` token needs an owner who holds the approver permission)."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

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
        **options,
    ) -> None:
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
            issued = token_create(name=name, scopes=scope, tenant=tenant_obj, owner=owner_obj)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stderr.write(
            f"Token {issued.token.prefix} created (scopes: {', '.join(issued.token.scopes)}"
            f"{', tenant: ' + tenant if tenant else ''}). It is shown once; store it now:"
        )
        self.stdout.write(issued.plaintext)
