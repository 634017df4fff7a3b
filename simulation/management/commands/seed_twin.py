"""python manage.py seed_twin: the demo's twin clusters, created once, and a what-if run.

- ``legacy-h100``: a split (separate training and inference pools) H100 cluster, the
  migration source;
- ``unified-demo``: a unified training + inference cluster of Ascend 950DT-class cards in
  supernodes, the migration target.

**A comparable pair.** Both run the *same* workloads — the source's training jobs and
inference services, their demand, models, replica layouts and SLO targets, drawn once for
the source's card count and H100s — on the same number of cards (4,096 each by default):
only the accelerator and the placement policy differ, so the validation report compares the
same services under the same load and its per-card figures mean what they say. (With
``--legacy-cards`` different from ``--cards`` the two sides get their own workloads and the
report says the sizes differ.)

**A what-if run** of the unified cluster's cards and accelerator is queued (the worker runs
it), so the report's ablation — what each mechanism buys on these cards — is not empty.

Each tick advances ``--steps-per-tick`` simulated minutes, so with the default 10 a
simulated day passes in 24 wall-clock minutes.
"""

import dataclasses

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from accounts.models import User
from inventory.models import Cluster
from inventory.selectors import default_cluster
from inventory.services import cluster_default_set
from simulation.engine import default_scenario
from simulation.engine.catalog import get_hardware, get_model
from simulation.engine.scenario.defaults import _tp_for_tpot
from simulation.engine.scenario.types import Scenario, Topology
from simulation.models import TwinRun, WhatIfRun
from simulation.services import scenario_tenants, twin_run_create
from simulation.services.whatif import whatif_create

DEMO_RUNS = (
    # name, cluster kind, hardware, policy, card count setting (the source first: the
    # target runs the source's workloads)
    ("legacy-h100", Cluster.Kind.LEGACY, "h100-sxm", "split", "legacy_cards"),
    ("unified-demo", Cluster.Kind.UNIFIED, "ascend-950dt", "unified", "cards"),
)
# The queued what-if: long enough for a day's peak, two seeds for a spread (~8 min of a
# worker at 4,096 cards).
WHATIF_HOURS, WHATIF_SEEDS = 4.0, 2
# The demo's inference demand: each service's daily peak fills its replicas at the policy's
# autoscaler target occupancy (``default_scenario(inference_demand="legacy")``), as an operator
# sizes a serving fleet. The engine's default (``fleet``) is fitted to public duty-cycle traces
# of mostly idle reservations (a median service uses ~0.6 % of its reservation at peak): right
# for the what-if's gain, but its few tokens/s per card priced a token 10-100x above what a
# loaded serving stack does, so the demo's cost pages argued from an idle fleet.
DEMO_INFERENCE_DEMAND = "legacy"
# The H100 side's peak inference cards, as a share of its cards. The target runs the *same*
# demand on Ascend 950DT cards, where the twin's serving model needs ~8x the cards of an H100
# for it (~50 vs ~450 output tokens/s per card at the target occupancy): at the engine's 0.45
# the target's inference would need ~3x its cards and starve every training job. 0.06 puts the
# target's inference at ~30 % of its cards on the day's mean.
DEMO_INFERENCE_PEAK_FRACTION = 0.06
# Offered training load (``default_scenario(training_load=...)``, in units of the cards outside
# the inference peak share): the engine's 1.6 assumes idle inference reservations for training
# to absorb; beside loaded replicas 0.5 keeps the target under its cards at the day's peak
# (~0.47 training + ~0.42 inference), so the moved pilots' jobs run.
DEMO_TRAINING_LOAD = 0.5


def demo_scenario(*, cards: int, seed: int, hardware: str, policy: str) -> Scenario:
    """The demo's source scenario: the default mix with the demo's inference sizing and
    training load (:data:`DEMO_INFERENCE_DEMAND` and the rest)."""
    return default_scenario(
        cards=cards,
        seed=seed,
        hardware=hardware,
        policy=policy,
        inference_demand=DEMO_INFERENCE_DEMAND,
        training_load=DEMO_TRAINING_LOAD,
        inference_peak_fraction=DEMO_INFERENCE_PEAK_FRACTION,
    )


def same_workloads(source: Scenario, *, hardware: str, policy: str) -> Scenario:
    """``source``'s workloads, demand and seed on the same number of ``hardware`` cards under
    ``policy`` (its mechanisms the policy's preset): the comparable target. Each service
    keeps its model, demand and SLO targets; its replica layout (TP) is chosen for the
    target's accelerator by the same rule the scenario used for the source's, as an operator
    re-lays replicas out on new hardware (an H100 layout can miss a TPOT target elsewhere)."""
    hw = get_hardware(hardware)
    services = [
        dataclasses.replace(
            svc,
            tp=_tp_for_tpot(
                get_model(svc.model),
                hw,
                svc.slo_tpot_ms,
                svc.prompt_tokens_mean + svc.output_tokens_mean / 2,
            ),
        )
        for svc in source.services
    ]
    return dataclasses.replace(
        source,
        topology=Topology(cards=source.topology.cards, hardware=hardware),
        policy=dataclasses.replace(source.policy, name=policy, features=None),
        services=services,
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
        parser.add_argument("--legacy-cards", type=int, default=None)
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--steps-per-tick", type=int, default=10)

    def handle(self, *args, seed: int, steps_per_tick: int, **options) -> None:
        if not 1 <= steps_per_tick <= 60:
            raise CommandError("--steps-per-tick must be between 1 and 60")
        if options["legacy_cards"] is None:  # the comparable pair: the same cards each side
            options["legacy_cards"] = options["cards"]
        source: Scenario | None = None
        for name, kind, hardware, policy, cards_option in DEMO_RUNS:
            cards = options[cards_option]
            existing = TwinRun.objects.filter(name=name).select_related("cluster").first()
            if existing is not None:
                self.stdout.write(f"Twin run {name!r} already exists; left as it is.")
                _default_unless_chosen(existing.cluster)
                continue
            try:
                if source is not None and source.topology.cards == cards:
                    scenario = same_workloads(source, hardware=hardware, policy=policy)
                else:
                    scenario = demo_scenario(
                        cards=cards, seed=seed, hardware=hardware, policy=policy
                    )
            except ValueError as exc:
                raise CommandError(f"{name}: {exc}") from exc
            source = source or scenario
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
        self._whatif(options["cards"], DEMO_RUNS[-1][2], seed)

    def _whatif(self, cards: int, hardware: str, seed: int) -> None:
        """Queue the ablation of the unified cluster's cards and accelerator, once."""
        if WhatIfRun.objects.filter(cards=cards, hardware=hardware).exists():
            self.stdout.write("A what-if run of the unified cluster exists; left as it is.")
            return
        operator = User.objects.filter(username="operator").first()
        field = WhatIfRun._meta.get_field("cards")
        limits = [v.limit_value for v in field.validators]
        if operator is None or not min(limits) <= cards <= max(limits):
            self.stdout.write(
                f"No what-if queued ({cards} cards is outside {min(limits)}–{max(limits)} or no "
                "'operator' user: run seed_demo first); the report's ablation stays empty."
            )
            return
        run = whatif_create(
            cards=cards,
            hardware=hardware,
            hours=WHATIF_HOURS,
            seed=seed,
            seeds=WHATIF_SEEDS,
            created_by=operator,
        )
        self.stdout.write(
            f"What-if run #{run.pk} queued: {cards} × {hardware}, {WHATIF_HOURS:g} simulated "
            f"hours, {WHATIF_SEEDS} seeds (the worker runs it; the report's ablation reads it)."
        )
