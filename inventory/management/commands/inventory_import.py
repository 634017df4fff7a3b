"""python manage.py inventory_import FILE --cluster NAME [--dry-run] [--format csv|yaml]

The command line of the inventory import (``inventory.services.imports``): the same service,
checks and counts as the page and ``POST /api/v1/clusters/<name>/inventory-import/``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from inventory.models import Cluster
from inventory.services import InventoryImportError, inventory_import
from inventory.services.imports import FORMATS, format_of


class Command(BaseCommand):
    help = (
        "Import a cluster's nodes, racks, supernodes and card models from a CSV or YAML file "
        "(columns hostname, rack, supernode, card_model, card_count). Idempotent; every "
        "problem is listed with its line and nothing is written when there is one."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("file", help="CSV or YAML file ('-' reads standard input).")
        parser.add_argument("--cluster", required=True, help="The cluster's name.")
        parser.add_argument("--dry-run", action="store_true", help="Validate and count only.")
        parser.add_argument("--format", choices=FORMATS, default="auto")

    def handle(self, *args, file: str, cluster: str, dry_run: bool, format: str, **options):
        target = Cluster.objects.filter(name=cluster).first()
        if target is None:
            raise CommandError(f"unknown cluster {cluster!r}")
        if file == "-":
            text = sys.stdin.read()
        else:
            try:
                text = Path(file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"cannot read {file}: {exc}") from None
        try:
            report = inventory_import(
                cluster=target,
                text=text,
                format=format if format != "auto" else format_of(file),
                dry_run=dry_run,
            )
        except InventoryImportError as exc:
            lines = [str(p) for p in exc.problems] + exc.more_lines()
            raise CommandError("\n".join(lines)) from None
        self.stdout.write(json.dumps(report.as_dict(), indent=2))
