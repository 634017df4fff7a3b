"""python manage.py seed_demo [--password P]: demo tenants and users, safe to run again."""

from django.core.management.base import BaseCommand

from accounts.services.demo import demo_seed


class Command(BaseCommand):
    help = "Create the demo tenants and users (admin, operator, approver1/2, one customer each)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--password",
            help="Password for every demo user (default: generated once, kept in var/).",
        )

    def handle(self, *args, password: str | None = None, **options) -> None:
        result = demo_seed(password=password)
        self.stdout.write(
            f"Demo users: {len(result.created)} created/updated, {len(result.unchanged)} unchanged."
        )
        for username, role in result.logins:
            self.stdout.write(f"  {username:<18} {role}")
        self.stdout.write(f"Password for every demo user: {result.password}")
