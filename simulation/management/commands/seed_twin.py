"""python manage.py seed_twin: the demo's twin clusters, created once.

- ``unified-demo``: a unified training + inference cluster of Ascend 950DT-class cards in
  supernodes (8,192 by default), the migration target;
- ``legacy-h100``: a split (separate training and inference pools) H100 cluster, the
  migration source.

Both carry several tenants' training jobs and diurnal inference services; each tick advances
``--steps-per-tick`` simulated minutes, so with the default 10 a simulated day passes in
24 wall-clock minutes.
"""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from inventory.models import Cluster
from inventory.selectors import default_cluster
from inventory.services import cluster_default_set
from simulation.engine import default_scenario
from simulation.models import TwinRun
from simulation.services import scenario_tenants, twin_run_create

DEMO_RUNS = (
    # name, cluster kind, hardware, policy, card count setting
    ("unified-demo", Cluster.Kind.UNIFIED, "ascend-950dt", "unified", "cards"),
    ("legacy-h100", Cluster.Kind.LEGACY, "h100-sxm", "split", "legacy_cards"),
)


def _default_unless_chosen(cluster: Cluster) -> None:
    """The demo's clusters are the pages' defaults, unless an operator marked another cluster
    of the same side already."""
    current = default_cluster(unified=cluster.kind == Cluster.Kind.UNIFIED)
    if current is None or not current.default_for_pages:
        cluster_default_set(cluster)


class Command(BaseCommand):
    help = "Create the demo's unified twin cluster and its legacy H100 source (idempotent)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--cards", type=int, default=settings.TWIN_DEMO_CARDS)
        parser.add_argument("--legacy-cards", type=int, default=1024)
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--steps-per-tick", type=int, default=10)

    def handle(self, *args, seed: int, steps_per_tick: int, **options) -> None:
        if not 1 <= steps_per_tick <= 60:
            raise CommandError("--steps-per-tick must be between 1 and 60")
        for name, kind, hardware, policy, cards_option in DEMO_RUNS:
            existing = TwinRun.objects.filter(name=name).select_related("cluster").first()
            if existing is not None:
                self.stdout.write(f"Twin run {name!r} already exists; left as it is.")
                _default_unless_chosen(existing.cluster)
                continue
            cards = options[cards_option]
            try:
                scenario = default_scenario(
                    cards=cards, seed=seed, hardware=hardware, policy=policy
                )
            except ValueError as exc:
                raise CommandError(f"{name}: {exc}") from exc
            cluster, _ = Cluster.objects.get_or_create(
                name=name,
                defaults={"kind": kind, "description": f"{cards} × {hardware}, simulated"},
            )
            self.stdout.write(f"Creating twin run {name!r}: {cards} × {hardware}, {policy} …")
            # The demo's workloads belong to its real (demo) tenants, named deliberately; an
            # operator's own runs go to the sandbox tenant.
            run = twin_run_create(
                name=name,
                cluster=cluster,
                scenario=scenario,
                tenant_map={t: t for t in scenario_tenants(scenario)},
            )
            _default_unless_chosen(cluster)
            TwinRun.objects.filter(pk=run.pk).update(steps_per_tick=steps_per_tick)
            self.stdout.write(
                f"  {cluster.supernodes.count()} supernodes, {cluster.nodes.count()} nodes, "
                f"{cluster.workloads.count()} workloads; {steps_per_tick} simulated minutes "
                f"every {settings.TWIN_TICK_SECONDS} s."
            )
