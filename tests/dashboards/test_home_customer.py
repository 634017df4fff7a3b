"""The customer home lists each workload with its cluster, and latency as readable durations."""

from __future__ import annotations

import re

import pytest

from telemetry.models import EntityKind
from tests.factories import ClusterFactory, EntityFactory, WorkloadFactory


def _workload(tenant, cluster: str = "unified-a", **fields):
    """A workload the customer can see (customers read workloads through their entity)."""
    cluster_row = ClusterFactory(name=cluster)
    workload = WorkloadFactory(tenant=tenant, cluster=cluster_row, **fields)
    EntityFactory(
        cluster=cluster_row, kind=EntityKind.WORKLOAD, key=f"wl/{workload.pk}", workload=workload
    )
    return workload


@pytest.mark.django_db
def test_customer_home_names_the_cluster_of_workloads_that_share_a_name(client_as, tenants):
    for cluster in ("unified-a", "split-b"):
        _workload(tenants["acme"], cluster, name="chat-svc")
    page = client_as("customer").get("/").content.decode()
    cells = re.findall(r"<td data-cluster>([^<]*)</td>", page)
    assert sorted(cells) == ["split-b", "unified-a"]
    assert page.count(">chat-svc</a>") == 2


@pytest.mark.django_db
def test_customer_home_shows_slo_targets_as_durations(client_as, tenants):
    _workload(tenants["acme"], name="chat-svc", slo_ttft_ms=132084, slo_tpot_ms=50)
    page = client_as("customer").get("/").content.decode()
    assert "/ 2.2 min" in page
    assert "/ 50 ms" in page


@pytest.mark.django_db
def test_customer_home_leads_with_cost_and_migration_progress(client_as, users, tenants):
    """Issue 24: the home was 12,000 px of workloads with no cost or migration summary."""
    from tests.rollout.conftest import plan_for_access

    mine, theirs = plan_for_access("acme"), plan_for_access("panda")
    page = client_as("customer").get("/").content.decode()
    cost, migrations = page.index("data-home-cost"), page.index("data-home-migrations")
    workloads = page.index("Your workloads")
    assert cost < workloads and migrations < workloads
    assert f"/migrations/{mine.pk}/" in page and mine.name in page
    assert f"/migrations/{theirs.pk}/" not in page and theirs.name not in page
    assert 'href="/cost/"' in page


@pytest.mark.django_db
def test_customer_home_shows_one_page_of_active_workloads_not_all_of_them(client_as, tenants):
    for i in range(25):
        _workload(tenants["acme"], name=f"train-{i:03d}")
    page = client_as("customer").get("/").content.decode()
    assert page.count("<td data-cluster>") == 10
    assert "10 of 25 active workloads shown." in page
