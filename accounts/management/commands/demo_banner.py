"""Print where the demo is served, which broker and database it uses, and the logins."""

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection

from accounts.services.demo import DEMO_STAFF, DEMO_TENANTS, demo_password


class Command(BaseCommand):
    help = "Print the demo URL, broker, database and logins."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/")

    def handle(self, *args, url: str, **options) -> None:
        usernames = [u for u, _, _ in DEMO_STAFF] + [f"customer-{s}" for s, _ in DEMO_TENANTS]
        lines = [
            "=" * 72,
            f"Cluster Portal demo: {url}",
            f"  status page: {url}status/   admin: {url}admin/",
            f"  broker:   {settings.BROKER_DESCRIPTION}",
            f"  database: {connection.vendor} ({connection.settings_dict['NAME']})",
            f"  logins:   {', '.join(usernames)}",
            f"  password: {demo_password(None)}  (set your own: make demo PASSWORD=...)",
            "  Ctrl-C stops web, worker and beat.",
            "=" * 72,
        ]
        self.stdout.write("\n".join(lines))
