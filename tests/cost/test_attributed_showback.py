"""Showback on a real cluster: measured card-seconds from attribution, requested as a labelled
fallback, and billed + idle = cost still."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cost.allocation import Basis
from cost.models import CostAssumptions
from cost.selectors import cluster_cost, tenant_showback
from inventory.models import Cluster, Workload
from telemetry.receivers.text import ingest_prometheus_text
from tests.cost.cost_data import make_cluster, minutes_ago, write_cluster
from tests.cost.test_cost_page import INPUTS

MINUTES = 60
H100 = 'modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"'


def dcgm(holders: list[str]) -> str:
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for i, pod in enumerate(holders):
        labels = f',namespace="acme-bank",pod="{pod}"' if pod else ""
        lines.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="{i}",UUID="GPU-{i}",{H100}{labels}}} 80')
    return "\n".join(lines) + "\n"


@pytest.fixture
def real_cluster(db, tenants):
    CostAssumptions.objects.create(**INPUTS)
    cluster = make_cluster("real", Cluster.Kind.UNIFIED, cards=8)
    write_cluster(cluster, {"cluster_power_watts": [3_000.0] * MINUTES})
    # Two of eight cards held by llama pods for the last 30 minutes, scraped every minute.
    for minute in range(MINUTES):
        holders = ["llama-70b-0", "llama-70b-1"] if minute < 30 else ["", ""]
        ingest_prometheus_text(
            text=dcgm(holders + [""] * 6),
            cluster_name="real",
            node=None,
            source="dcgm",
            scrape_time=minutes_ago(minute + 1),
        )
    chat = Workload.objects.create(
        tenant=tenants["acme"],
        cluster=cluster,
        name="llama-chat",
        kind="inference",
        cards_requested=4,
        series_selector='namespace="acme-bank", pod=~"llama-70b-.*"',
    )
    batch = Workload.objects.create(
        tenant=tenants["acme"], cluster=cluster, name="batch", kind="training", cards_requested=1
    )
    return cluster, chat, batch


def _window():
    end = datetime.now(tz=UTC)
    return end - timedelta(hours=6), end


def test_a_selected_workload_is_billed_the_card_seconds_its_pods_held(real_cluster):
    cluster, chat, batch = real_cluster
    cost = cluster_cost(cluster, *_window())
    line = cost.ledger.line(chat.pk)
    assert cost.ledger.basis[chat.pk] == Basis.MEASURED
    # 2 cards × 30 one-minute scrapes (each interval ends one step after its last scrape).
    assert line.card_seconds == pytest.approx(2 * 30 * 60, rel=0.02)
    assert cost.ledger.billed_cents + cost.ledger.idle_cents == cost.ledger.cost_cents


def test_a_real_workload_without_a_selector_is_billed_its_request_and_says_so(real_cluster):
    cluster, chat, batch = real_cluster
    cost = cluster_cost(cluster, *_window())
    assert cost.ledger.basis[batch.pk] == Basis.REQUESTED
    covered = cost.ledger.covered_seconds
    assert cost.ledger.line(batch.pk).card_seconds == pytest.approx(1 * covered, rel=0.02)
    rows = {r.workload: r for r in tenant_showback(chat.tenant_id, *_window())}
    assert rows["batch"].basis == Basis.REQUESTED
    assert "estimate" in rows["batch"].basis_label
    assert rows["llama-chat"].basis == Basis.MEASURED


def test_cards_no_selector_claims_are_reported_unbound_not_billed(real_cluster):
    cluster, chat, batch = real_cluster
    chat.series_selector = 'pod="someone-else"'
    chat.save()
    cost = cluster_cost(cluster, *_window())
    assert cost.ledger.line(chat.pk).card_seconds == 0
    assert cost.ledger.unbound_card_seconds == pytest.approx(2 * 30 * 60, rel=0.02)


def test_a_twin_cluster_keeps_billing_what_the_scheduler_granted(db, tenants):
    from tests.cost.cost_data import add_workload

    CostAssumptions.objects.create(**INPUTS)
    twin = make_cluster("twin", Cluster.Kind.UNIFIED, cards=4)
    write_cluster(twin, {"cluster_power_watts": [1_000.0] * MINUTES})
    held = add_workload(twin, tenants["acme"], "job", "training", 3, [2.0] * MINUTES)
    idle = add_workload(twin, tenants["acme"], "queued", "training", 2, None)
    cost = cluster_cost(twin, *_window())
    assert cost.ledger.basis[held.pk] == Basis.SCHEDULER
    assert cost.ledger.basis[idle.pk] == Basis.SCHEDULER  # held nothing: pays nothing
    assert cost.ledger.line(idle.pk).card_seconds == 0
