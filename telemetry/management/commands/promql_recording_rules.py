"""Print (or ``--write``) the recording rules for the portal's fleet figures."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from telemetry.read.promql.rules import RULES_FILE, recording_rules_text


class Command(BaseCommand):
    help = (
        "Print the Prometheus/vmalert recording rules for the portal's fleet figures, written "
        "from the PromQL the portal asks; --write rewrites "
        "deploy/prometheus/cluster-portal-rules.yml."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--write", action="store_true", help="rewrite the shipped rules file")

    def handle(self, *args, write: bool = False, **options) -> None:
        text = recording_rules_text()
        if write:
            RULES_FILE.write_text(text)
            self.stdout.write(f"wrote {RULES_FILE}")
        else:
            self.stdout.write(text, ending="")
