"""python manage.py seed_twin [--cards N] [--seed S]: the demo's unified twin cluster, once."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from monitoring.models import Cluster
from simulation.engine import default_scenario
from simulation.models import TwinRun
from simulation.services import twin_run_create

DEMO_CLUSTER = "unified-demo"


class Command(BaseCommand):
    help = "Create the demo's unified cluster driven by the digital twin (idempotent)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--cards", type=int, default=settings.TWIN_DEMO_CARDS)
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args, cards: int, seed: int, **options) -> None:
        if TwinRun.objects.filter(name=DEMO_CLUSTER).exists():
            self.stdout.write(f"Twin run {DEMO_CLUSTER!r} already exists; nothing to do.")
            return
        try:
            scenario = default_scenario(cards=cards, seed=seed)
        except ValueError as exc:
            raise CommandError(f"--cards {cards}: {exc}") from exc
        cluster, _ = Cluster.objects.get_or_create(
            name=DEMO_CLUSTER,
            defaults={
                "kind": Cluster.Kind.UNIFIED,
                "description": "Unified training + inference cluster simulated by the twin",
            },
        )
        self.stdout.write(f"Creating twin run {DEMO_CLUSTER!r} with {cards} cards …")
        run = twin_run_create(
            name=DEMO_CLUSTER,
            cluster=cluster,
            scenario=scenario,
            fan_out=cards >= settings.TWIN_FANOUT_MIN_CARDS,
        )
        self.stdout.write(
            f"Twin run {run.name!r} created: {cluster.supernodes.count()} supernodes, "
            f"{cluster.nodes.count()} nodes; beat advances it every {settings.TWIN_TICK_SECONDS} s."
        )
