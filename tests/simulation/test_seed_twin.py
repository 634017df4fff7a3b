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
