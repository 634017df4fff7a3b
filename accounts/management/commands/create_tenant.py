"""python manage.py create_tenant SLUG --name "Display Name" [--update]

Production set-up: create a customer tenant. Running it again with the same values changes
nothing; different values are refused, naming each difference, unless ``--update``.
"""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.services.people import tenant_ensure


def validation_message(exc: ValidationError) -> str:
    """A ValidationError as one line naming each field, for a CommandError."""
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in exc.message_dict.items())
    return "; ".join(exc.messages)


class Command(BaseCommand):
    help = "Create a customer tenant (idempotent; --update changes an existing one's name)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug", help="The tenant's id in URLs and commands, e.g. acme-bank.")
        parser.add_argument("--name", required=True, help="The tenant's display name.")
        parser.add_argument("--update", action="store_true", help="Change an existing tenant.")

    def handle(self, *args, slug: str, name: str, update: bool, **options) -> None:
        try:
            done = tenant_ensure(slug=slug, name=name, update=update)
        except ValidationError as exc:
            raise CommandError(validation_message(exc)) from None
        self.stdout.write(f"tenant {done.obj.slug} {done.outcome}")
