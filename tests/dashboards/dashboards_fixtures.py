"""Real telemetry for the dashboard tests: a small twin cluster ticked a few times.

Two of the twin's workloads are handed to the test tenants (acme, panda) so tenant scoping
can be checked against the ``users`` fixture's customers.
"""

from __future__ import annotations

import pytest

from inventory.models import Accelerator, Cluster, Node, Rack, Supernode, Workload
from telemetry.models import Entity


@pytest.fixture
def twin_cluster(db, users, tenants) -> Cluster:
    return make_twin_cluster(tenants)


def make_twin_cluster(tenants: dict) -> Cluster:
    """A 256-card twin cluster ticked once, one workload each for acme and panda."""
    from simulation.engine import default_scenario
    from simulation.services import twin_pool_tick, twin_run_create, twin_tick

    cluster = Cluster.objects.create(name="twin-dash", kind=Cluster.Kind.UNIFIED)
    run = twin_run_create(
        name="dash", cluster=cluster, scenario=default_scenario(cards=256, seed=3)
    )
    assert twin_tick(run_id=run.pk, expected_seq=0).committed
    assert twin_pool_tick(run_id=run.pk, expected_seq=0).committed
    for slug, kind in (("acme", Workload.Kind.INFERENCE), ("panda", Workload.Kind.TRAINING)):
        workload = Workload.objects.filter(cluster=cluster, kind=kind).order_by("name").first()
        workload.tenant = tenants[slug]
        workload.save(update_fields=["tenant"])
        Entity.objects.filter(workload=workload).update(tenant=tenants[slug])
    return cluster


def tenant_workload(slug: str) -> Workload:
    return Workload.objects.get(tenant__slug=slug)


class WithInventory:
    """Access checks need entities to exist, not telemetry: a tiny inventory is enough."""

    @pytest.fixture(autouse=True)
    def _inventory(self, cluster, workloads):
        supernode = Supernode.objects.create(cluster=cluster, name="sn0")
        rack = Rack.objects.create(supernode=supernode, name="sn0/r0")
        node = Node.objects.create(cluster=cluster, rack=rack, hostname="sn0/r0/n0")
        Accelerator.objects.create(node=node, index=0, vendor_id="uuid-0")
        for workload in workloads.values():
            Entity.objects.create(
                cluster=cluster,
                kind="workload",
                key=workload.name,
                workload=workload,
                tenant=workload.tenant,
            )


# The real captures (dcgm-exporter: two H100s on dgx-01; npu-exporter: two 910Bs, whose host
# comes from the push) ingested through the real ingestion service at these ages (seconds).
EXPORTER_AGES = (240, 180, 120, 60, 0)


@pytest.fixture
def exporter_cluster(db, users) -> Cluster:
    """A cluster fed only by its exporters: cards registered by ingestion, sample rows, no
    twin frames, no cluster scalars, no racks."""
    import re
    import time

    from django.db import transaction

    from telemetry.receivers.text import ingest_prometheus_text
    from tests.telemetry.prometheus_fixtures import DCGM_TEXT, NpuExporter

    cluster = Cluster.objects.create(name="real-a", kind=Cluster.Kind.LEGACY)
    npu_text = NpuExporter()()
    now = time.time()
    for age in EXPORTER_AGES:
        at = now - age
        stamped = re.sub(r" \d{13}$", f" {int(at * 1000)}", npu_text, flags=re.M)
        with transaction.atomic():
            ingest_prometheus_text(
                text=DCGM_TEXT, cluster_name="real-a", node=None, source="dcgm", scrape_time=at
            )
            ingest_prometheus_text(
                text=stamped, cluster_name="real-a", node="atlas-01", source="npu", scrape_time=at
            )
    return cluster
