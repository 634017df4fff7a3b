"""A small twin run shared by the simulation tests."""

from __future__ import annotations

import pytest

from monitoring.models import Cluster
from simulation.engine import default_scenario
from simulation.services import twin_run_create


@pytest.fixture
def twin_run(db):
    cluster = Cluster.objects.create(name="twin-small", kind=Cluster.Kind.UNIFIED)
    return twin_run_create(
        name="small", cluster=cluster, scenario=default_scenario(cards=256, seed=3)
    )
