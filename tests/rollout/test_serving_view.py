"""The plan page's canary vs baseline view (issue 23 part 6): for the current gray step the
live request split per serving endpoint and both sides' TTFT/TPOT P50/P99 from their engines'
histograms over one window; "no serving metrics bound" when neither side has an endpoint."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from rollout.models import AnalysisRun, Gate
from telemetry.models import ExporterTarget, ServingBinding
from telemetry.receivers.text import ingest_prometheus_text
from telemetry.store.provenance import source_exporter
from tests.rollout.test_router_flows import to_gray
from tests.serving_exposition import EngineMetrics


def bound_engine(cluster, workload, instance: str) -> tuple[EngineMetrics, callable]:
    """A vLLM endpoint bound to ``workload``, scraped by its cluster's exporter target."""
    target = ExporterTarget.objects.create(
        name=f"vllm-{cluster.name}", url="http://127.0.0.1:9/metrics", cluster=cluster
    )
    ServingBinding.objects.create(workload=workload, model_name="llama-3-8b", instance=instance)
    engine = EngineMetrics(labels={"instance": instance})

    def scrape(at) -> None:
        ingest_prometheus_text(
            text=engine.text(),
            cluster_name=cluster.name,
            node=None,
            source="auto",
            scrape_time=at.timestamp(),
            provenance=source_exporter(target),
        )

    return engine, scrape


def seconds(shown: str) -> float:
    """A duration as the page prints it ("2.48 s", "77.6 ms") in seconds."""
    value, unit = shown.split()
    return float(value) / (1000 if unit == "ms" else 1)


@pytest.fixture
def gray_plan(plan_factory, users):
    """A plan at its first gray step (5 %) whose step started two minutes ago."""
    plan = to_gray(plan_factory(gray_steps=[5, 50, 100]), users)
    assert plan.current_step_percent == 5
    since = timezone.now() - timedelta(seconds=120)
    Gate.objects.filter(pk=plan.current_gate_id).update(created_at=since)
    # The twin confirmed the share then, and the step's analysis clock started then.
    plan.workloads.filter(phase="gray").update(confirmed_at=since)
    AnalysisRun.objects.filter(gate_id=plan.current_gate_id).update(
        traffic_at=since, started_at=since
    )
    return plan, since


def test_the_page_compares_canary_and_baseline_over_the_steps_window(
    client_as, gray_plan, clusters, workloads
):
    plan, since = gray_plan
    canary, scrape_canary = bound_engine(
        clusters["unified"], workloads["unified:acme-chat"], "10.0.1.21:8000"
    )
    baseline, scrape_baseline = bound_engine(
        clusters["legacy"], workloads["legacy:acme-chat"], "10.0.0.11:8000"
    )
    # Before the step: a slow baseline history that must not count in the step's window.
    for _ in range(200):
        baseline.request(ttft=4.0, tpot=0.5)
    scrape_baseline(since - timedelta(seconds=60))
    for step in range(3):
        for i in range(90):
            baseline.request(ttft=0.07 + 0.0002 * i, tpot=0.03)
        for i in range(10):
            canary.request(ttft=1.5 + 0.01 * i, tpot=0.2, ok=i > 0)
        at = since + timedelta(seconds=20 + 40 * step)
        scrape_canary(at)
        scrape_baseline(at)

    for role in ("customer", "operator"):
        page = client_as(role).get(f"/migrations/{plan.pk}/").content.decode()
        section = page.split('id="serving"', 1)[1].split("</section>", 1)[0]
        # Increase between the first and last in-step scrape: 20 canary, 180 baseline.
        assert "canary 10%" in section and "baseline 90%" in section
        assert re.search(r"llama-3-8b@10.0.1.21:8000</code></td><td[^>]*>20<", section)
        assert re.search(r"llama-3-8b@10.0.0.11:8000</code></td><td[^>]*>180<", section)
        rows = {
            label: (seconds(canary), seconds(baseline))
            for label, canary, baseline in re.findall(
                r"<td>(T[TP][FO]T P\d\d)</td><td[^>]*>([^<]+)</td><td[^>]*>([^<]+)</td>", section
            )
        }
        assert set(rows) == {"TTFT P50", "TTFT P99", "TPOT P50", "TPOT P99"}
        # histogram_quantile over the step's bucket increases: the canary's TTFT lies in
        # vLLM's (1, 2.5] s bucket, the baseline's in (0.06, 0.1] (its slow 4 s history
        # before the step is outside the window); TPOT in (0.15, 0.2] vs (0.025, 0.05].
        assert 1.0 < rows["TTFT P50"][0] < rows["TTFT P99"][0] <= 2.5
        assert 0.06 < rows["TTFT P50"][1] < rows["TTFT P99"][1] <= 0.1
        assert 0.15 < rows["TPOT P99"][0] <= 0.2 and 0.025 < rows["TPOT P99"][1] <= 0.05
    assert client_as("other_customer").get(f"/migrations/{plan.pk}/").status_code == 404


def test_no_serving_endpoint_bound_is_said_not_drawn(client_as, gray_plan):
    plan, _ = gray_plan
    page = client_as("customer").get(f"/migrations/{plan.pk}/").content.decode()
    section = page.split('id="serving"', 1)[1].split("</section>", 1)[0]
    assert "No serving metrics bound" in section
    assert "TTFT P99" not in section


def test_a_plan_not_in_a_gray_step_shows_no_comparison(client_as, plan_factory):
    plan = plan_factory()
    page = client_as("customer").get(f"/migrations/{plan.pk}/").content.decode()
    assert 'id="serving"' not in page
