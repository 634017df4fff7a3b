"""Per-process memos of inventory rows the ingestion keeps writing (issue 22 §6): a card's
health is written only when it changes (or the memo is older than HEALTH_MEMO_SECONDS), and its
``last_seen`` at most every 1.5 scrape intervals under the default absence threshold."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from inventory.models import Accelerator
from telemetry.ingest import health
from telemetry.ingest.pipeline import last_seen_gap
from telemetry.receivers.text import ingest_prometheus_text

T0 = 1_764_400_000.0


def xid(code: int) -> str:
    return f'DCGM_FI_DEV_XID_ERRORS{{gpu="0",UUID="GPU-aaa",Hostname="dgx-01"}} {code}\n'


def scrape(text: str, at: float, capture) -> None:
    with capture(execute=True):
        ingest_prometheus_text(
            text=text, cluster_name="unified-a", node=None, source="dcgm", scrape_time=at
        )


@pytest.mark.django_db
def test_a_repeated_health_costs_no_accelerator_query_and_a_change_is_written_at_once(
    cluster, django_capture_on_commit_callbacks, django_assert_max_num_queries
):
    capture = django_capture_on_commit_callbacks
    scrape(xid(0), T0, capture)
    assert Accelerator.objects.get(vendor_id="GPU-aaa").health == Accelerator.Health.HEALTHY
    with django_assert_max_num_queries(50) as queries:
        scrape(xid(0), T0 + 15, capture)
    health_writes = [q for q in queries.captured_queries if 'SET "health"' in q["sql"]]
    assert health_writes == []
    scrape(xid(79), T0 + 30, capture)  # fallen off the bus: unhealthy at once
    assert Accelerator.objects.get(vendor_id="GPU-aaa").health == Accelerator.Health.UNHEALTHY


@pytest.mark.django_db
def test_a_health_changed_elsewhere_is_corrected_once_the_memo_is_stale(
    cluster, django_capture_on_commit_callbacks, monkeypatch
):
    capture = django_capture_on_commit_callbacks
    scrape(xid(0), T0, capture)
    Accelerator.objects.filter(vendor_id="GPU-aaa").update(health=Accelerator.Health.UNHEALTHY)
    scrape(xid(0), T0 + 15, capture)  # trusted from the memo: not rewritten yet
    assert Accelerator.objects.get(vendor_id="GPU-aaa").health == Accelerator.Health.UNHEALTHY
    later = time.monotonic() + health.HEALTH_MEMO_SECONDS
    monkeypatch.setattr(health, "time", SimpleNamespace(monotonic=lambda: later))
    scrape(xid(0), T0 + 30, capture)
    assert Accelerator.objects.get(vendor_id="GPU-aaa").health == Accelerator.Health.HEALTHY


@pytest.mark.django_db
def test_last_seen_is_rewritten_every_second_scrape_under_the_default_absence_threshold(cluster):
    assert cluster.absent_after_intervals == 4
    assert last_seen_gap(cluster) == 1.5 * cluster.scrape_interval_seconds
    cluster.absent_after_intervals = 2  # a tight threshold: every scrape
    assert last_seen_gap(cluster) == 0.5 * cluster.scrape_interval_seconds
