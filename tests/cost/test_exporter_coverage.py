"""Covered time never exceeds the span the data covers (issue 30: an exporter-fed cluster's
ledger covered 1,520 s where its telemetry spanned 1,381 s, so a workload holding 8 cards
throughout read "7.15 cards held" and idle cost was inflated by the same 10%)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cost.models import CostAssumptions
from cost.selectors import cluster_cost
from inventory.models import Cluster, Workload
from telemetry.receivers.text import ingest_prometheus_text
from tests.cost.cost_data import make_cluster
from tests.cost.test_attributed_showback import H100
from tests.cost.test_cost_page import INPUTS

SCRAPE = 15.0
SCRAPES = 92  # 91 intervals: 1,365 s from the first scrape to the last


def dcgm(pods: list[str]) -> str:
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge", "# TYPE DCGM_FI_DEV_POWER_USAGE gauge"]
    for i, pod in enumerate(pods):
        labels = f'gpu="{i}",UUID="GPU-{i}",{H100},namespace="acme-bank",pod="{pod}"'
        lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 80")
        lines.append(f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} 500")
    return "\n".join(lines) + "\n"


@pytest.fixture
def exporter_fed(db, tenants):
    """Eight cards held by one job's pods at every scrape, no cluster scalars stored: the
    cluster's figures are derived from its cards' samples."""
    CostAssumptions.objects.create(**INPUTS)
    # No cards made beforehand: the exporter registers its eight.
    cluster = make_cluster("fed", Cluster.Kind.UNIFIED, cards=0)
    last = datetime.now(tz=UTC).timestamp() - 30
    first = last - SCRAPE * (SCRAPES - 1)
    for i in range(SCRAPES):
        ingest_prometheus_text(
            text=dcgm([f"llama-70b-{c}" for c in range(8)]),
            cluster_name="fed",
            node=None,
            source="dcgm",
            scrape_time=first + SCRAPE * i,
        )
    job = Workload.objects.create(
        tenant=tenants["acme"],
        cluster=cluster,
        name="llama",
        kind="inference",
        cards_requested=8,
        series_selector='namespace="acme-bank", pod=~"llama-70b-.*"',
    )
    return cluster, job, first, last


@pytest.mark.parametrize("hours", [6, 24, 24 * 7])
def test_a_job_holding_every_card_throughout_reads_all_cards_held(exporter_fed, hours):
    cluster, job, first, last = exporter_fed
    end = datetime.now(tz=UTC)
    ledger = cluster_cost(cluster, end - timedelta(hours=hours), end).ledger
    span = last - first + SCRAPE  # the last scrape stands for one interval, as attribution does
    # Within the read's bucketing (a 1 h read plots 7 s steps), never the 10% of the bug.
    assert ledger.covered_seconds <= span * 1.01
    assert ledger.covered_seconds == pytest.approx(span, rel=0.01)
    assert ledger.cards == 8
    assert ledger.mean_cards_held == pytest.approx(8.0, abs=0.05)
    assert ledger.line(job.pk).card_seconds == pytest.approx(8 * span, rel=0.01)
    # Nothing idle beyond rounding: the job held every card of the covered time.
    assert ledger.idle_cents <= 0.01 * ledger.cost_cents + len(ledger.hours)
