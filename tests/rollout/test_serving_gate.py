"""One gate path for real engines (issue 23 part 2): a criterion on ``serving_ttft_seconds``
reads the P99 from the bound endpoints' histogram buckets over the step's own window, and
``serving_error_ratio`` the increase of failed ÷ all finished requests."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rollout.models import AnalysisRun, PhaseKind, PlanState
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.transitions import plan_start
from telemetry.models import ExporterTarget, ServingBinding
from telemetry.receivers.text import ingest_prometheus_text
from telemetry.store.provenance import source_exporter
from tests.serving_exposition import EngineMetrics

INSTANCE = "10.0.0.9:8000"
SLO = 0.5  # TTFT P99 objective, seconds


@pytest.fixture
def canary(clusters, workloads, settings):
    """A vLLM endpoint on the target cluster, scraped by the cluster's own exporter target
    (a source gates trust by default) and bound to the target's acme-chat."""
    settings.TELEMETRY_MAX_FUTURE_SECONDS = 3600  # the test's step runs ahead of the clock
    target = ExporterTarget.objects.create(
        name="vllm-canary", url="http://127.0.0.1:9/metrics", cluster=clusters["unified"]
    )
    ServingBinding.objects.create(
        workload=workloads["unified:acme-chat"], model_name="llama-3-8b", instance=INSTANCE
    )
    engine = EngineMetrics(labels={"instance": INSTANCE})

    def scrape(at) -> None:
        ingest_prometheus_text(
            text=engine.text(),
            cluster_name=clusters["unified"].name,
            node=None,
            source="auto",
            scrape_time=at.timestamp(),
            provenance=source_exporter(target),
        )

    return engine, scrape


def started(plan_factory, users, **criterion):
    plan = plan_factory(criteria={PhaseKind.PILOT: [criterion]})
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan.refresh_from_db()
    return plan, AnalysisRun.objects.get(gate=plan.current_gate)


def ttft_criterion(**more) -> dict:
    return {
        "metric": "serving_ttft_seconds",
        "aggregation": "p99",
        "threshold": SLO,
        "window_seconds": 120,
        "count": 1,
        "initial_delay_seconds": 0,
        "min_samples": 3,
        **more,
    }


def serve(engine: EngineMetrics, scrape, run, *, ttft: float, failures: int = 0) -> None:
    """Three scrapes inside the step, 40 requests between each."""
    for step in range(3):
        for i in range(40):
            engine.request(ttft=ttft * (0.8 + 0.01 * i), tpot=0.03, ok=i >= failures)
        scrape(run.traffic_at + timedelta(seconds=10 + 20 * step))


def test_a_slow_endpoint_fails_its_gate_on_its_own_histograms(plan_factory, users, canary):
    engine, scrape = canary
    # Fast before the step: history that must not rescue the step
    for _ in range(500):
        engine.request(ttft=0.05, tpot=0.02)
    plan, run = started(plan_factory, users, **ttft_criterion())
    scrape(run.traffic_at - timedelta(seconds=30))
    serve(engine, scrape, run, ttft=3 * SLO)  # TTFT ≈ 1.2–1.6 s: three times the SLO

    analysis_run_step(run_id=run.pk, now=run.traffic_at + timedelta(seconds=60))

    measurement = run.metrics.get().measurements.get()
    assert measurement.outcome == "failed", measurement.reason
    assert measurement.value > 2 * SLO and measurement.samples == 3
    assert "p99(serving_ttft_seconds)" in measurement.reason
    plan.refresh_from_db()
    assert plan.state == PlanState.ROLLED_BACK


def test_a_fast_endpoint_passes_the_same_gate(plan_factory, users, canary):
    engine, scrape = canary
    plan, run = started(plan_factory, users, **ttft_criterion())
    serve(engine, scrape, run, ttft=0.1)

    analysis_run_step(run_id=run.pk, now=run.traffic_at + timedelta(seconds=60))

    measurement = run.metrics.get().measurements.get()
    assert measurement.outcome == "successful", measurement.reason
    assert measurement.value <= 0.25  # every observation in (0.06, 0.1] or (0.1, 0.25]


def test_the_error_ratio_is_the_increase_of_failed_over_all(plan_factory, users, canary):
    engine, scrape = canary
    plan, run = started(
        plan_factory,
        users,
        **ttft_criterion(metric="serving_error_ratio", aggregation="mean", threshold=0.01),
    )
    serve(engine, scrape, run, ttft=0.1, failures=2)  # 2 of every 40 aborted

    analysis_run_step(run_id=run.pk, now=run.traffic_at + timedelta(seconds=60))

    measurement = run.metrics.get().measurements.get()
    # Increase between the first and last in-step scrape: 80 finished, 4 failed.
    assert measurement.value == pytest.approx(4 / 80)
    assert measurement.outcome == "failed"


def test_no_bound_endpoint_in_the_window_is_inconclusive(plan_factory, users, canary):
    plan, run = started(plan_factory, users, **ttft_criterion())
    analysis_run_step(run_id=run.pk, now=run.traffic_at + timedelta(seconds=60))
    measurement = run.metrics.get().measurements.get()
    assert measurement.outcome == "inconclusive"
    assert "no data in the window" in measurement.reason
