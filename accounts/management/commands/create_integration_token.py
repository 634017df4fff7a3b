"""python manage.py create_integration_token --name NAME --scope ingest [--tenant SLUG]."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.models import Tenant
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

    def handle(self, *args, name: str, scope: list[str], tenant: str | None, **options) -> None:
        tenant_obj = None
        if tenant:
            tenant_obj = Tenant.objects.filter(slug=tenant).first()
            if tenant_obj is None:
                known = ", ".join(Tenant.objects.values_list("slug", flat=True)) or "none"
                raise CommandError(f"Unknown tenant {tenant!r}. Known tenants: {known}.")
        try:
            issued = token_create(name=name, scopes=scope, tenant=tenant_obj)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stderr.write(
            f"Token {issued.token.prefix} created (scopes: {', '.join(issued.token.scopes)}"
            f"{', tenant: ' + tenant if tenant else ''}). It is shown once; store it now:"
        )
        self.stdout.write(issued.plaintext)
