"""python manage.py create_cluster NAME --kind unified|split|legacy [--description TEXT]
[--hardware-model ID] [--host-labels Hostname,node] [--scrape-interval 15]
[--absent-after 4] [--default] [--update]

Production set-up: create a cluster. Its topology then comes from ``inventory_import`` (or
exporters registering their hosts). Running it again with the same values changes nothing;
different values are refused, naming each difference, unless ``--update``. ``--default`` makes
it the cluster pages open on for its side (unified, or split/legacy baseline).
"""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.management.commands.create_tenant import validation_message
from inventory.models import Cluster, HardwareModel
from inventory.services import cluster_default_set, cluster_ensure


class Command(BaseCommand):
    help = "Create a cluster (idempotent; --update changes an existing one)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", help="A slug, e.g. prod-unified.")
        parser.add_argument("--kind", required=True, choices=Cluster.Kind.values)
        parser.add_argument("--description", default="")
        parser.add_argument("--hardware-model", help="Id (slug) of an existing hardware model.")
        parser.add_argument(
            "--host-labels", default="", help="Labels naming a sample's host, first wins."
        )
        parser.add_argument("--scrape-interval", type=int, default=15, help="Seconds.")
        parser.add_argument("--absent-after", type=int, default=4, help="Scrape intervals.")
        parser.add_argument("--default", action="store_true", help="Pages open on it.")
        parser.add_argument("--update", action="store_true", help="Change an existing cluster.")

    def handle(self, *args, name: str, hardware_model: str | None, **options) -> None:
        model = None
        if hardware_model:
            model = HardwareModel.objects.filter(slug=hardware_model).first()
            if model is None:
                known = ", ".join(HardwareModel.objects.values_list("slug", flat=True)) or "none"
                raise CommandError(
                    f"Unknown hardware model {hardware_model!r}. Known: {known} "
                    "(add one in the admin: Inventory → Hardware models)."
                )
        try:
            done = cluster_ensure(
                name=name,
                kind=options["kind"],
                description=options["description"],
                hardware_model=model,
                host_labels=options["host_labels"],
                scrape_interval_seconds=options["scrape_interval"],
                absent_after_intervals=options["absent_after"],
                update=options["update"],
            )
        except ValidationError as exc:
            raise CommandError(validation_message(exc)) from None
        if options["default"] and not done.cluster.default_for_pages:
            cluster_default_set(done.cluster)
        self.stdout.write(f"cluster {name} {done.outcome}")
