"""seed_twin creates the unified demo cluster and its legacy source once."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Tenant
from inventory.models import Cluster
from simulation.models import TwinRun


@pytest.mark.django_db
def test_seed_twin_creates_both_clusters_once():
    args = ["--cards", "128", "--legacy-cards", "64", "--steps-per-tick", "4"]
    call_command("seed_twin", *args, stdout=StringIO())
    runs = {r.name: r for r in TwinRun.objects.select_related("cluster")}
    assert set(runs) == {"unified-demo", "legacy-h100"}
    assert runs["unified-demo"].cluster.kind == Cluster.Kind.UNIFIED
    assert runs["legacy-h100"].cluster.kind == Cluster.Kind.LEGACY
    assert runs["legacy-h100"].scenario["policy"]["name"] == "split"
    assert runs["unified-demo"].steps_per_tick == 4
    assert Tenant.objects.count() >= 2
    out = StringIO()
    call_command("seed_twin", *args, stdout=out)
    assert out.getvalue().count("already exists") == 2
    assert TwinRun.objects.count() == 2


@pytest.mark.django_db
def test_seed_twin_names_a_bad_size():
    with pytest.raises(CommandError, match="cards"):
        call_command("seed_twin", "--cards", "10", stdout=StringIO())
    assert not TwinRun.objects.exists()


@pytest.mark.django_db
def test_the_demo_pair_runs_the_same_workloads_on_the_same_cards_and_queues_a_what_if():
    from accounts.models import User
    from simulation.models import WhatIfRun

    User.objects.create_user(username="operator", password="x-demo-pass-1")  # seed_demo's

    out = StringIO()
    call_command("seed_twin", "--cards", "128", stdout=out)
    runs = {r.name: r.scenario for r in TwinRun.objects.all()}
    source, target = runs["legacy-h100"], runs["unified-demo"]
    assert source["topology"]["cards"] == target["topology"]["cards"] == 128
    assert source["topology"]["hardware"] == "h100-sxm"
    assert target["topology"]["hardware"] == "ascend-950dt"
    assert target["policy"]["name"] == "unified" and source["policy"]["name"] == "split"

    # Same services (names, tenants, models, demand, SLO targets) and the same training jobs;
    # only each service's replica layout (TP) is chosen for the target's accelerator.
    def without_tp(services):
        return [{k: v for k, v in s.items() if k != "tp"} for s in services]

    assert without_tp(target["services"]) == without_tp(source["services"])
    assert target["training_jobs"] == source["training_jobs"]
    # The ablation of the unified cluster's cards and accelerator, queued for the worker.
    whatif = WhatIfRun.objects.get()
    assert (whatif.cards, whatif.hardware, whatif.status) == (128, "ascend-950dt", "queued")
    assert "What-if run" in out.getvalue()


@pytest.mark.django_db
def test_the_demo_serves_on_replicas_loaded_at_the_autoscaler_target_not_idle_reservations():
    """The demo's services are sized as an operator runs them: at the day's peak each fills
    its replicas at the policy's target occupancy, so the cards serving them are busy, where
    the engine's default fleet (public duty-cycle traces) keeps mostly idle reservations."""
    from simulation.engine import default_scenario
    from simulation.engine.catalog import get_hardware
    from simulation.engine.scenario.inference_demand import fleet_statistics
    from simulation.engine.scenario.types import Scenario

    call_command("seed_twin", "--cards", "256", stdout=StringIO())
    duty = {}
    for run in TwinRun.objects.all():
        scenario = Scenario.from_dict(run.scenario)
        hw = get_hardware(scenario.topology.hardware)
        assert all(s.reserved_replicas == 0 for s in scenario.services)  # nothing held idle
        duty[run.name] = fleet_statistics(scenario.services, hw, scenario.policy, static=False)
    idle_fleet = default_scenario(cards=256, seed=7, hardware="h100-sxm", policy="split")
    hw = get_hardware("h100-sxm")
    fleet = fleet_statistics(idle_fleet.services, hw, idle_fleet.policy)["duty_cycle_mean"]
    for name, stats in duty.items():
        # Busy most of the time they are held, against single digits for the idle fleet.
        assert stats["duty_cycle_mean"] > 0.5 > 0.1 > fleet, name
