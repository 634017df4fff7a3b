"""End to end through a real gateway: Debian's HAProxy in front of two OpenAI-compatible
backends (vLLM-format ``/metrics``), a bounded load generator on the loopback, and a plan
whose gray workload is routed by that HAProxy.

- healthy canary: 5 → 25 → 50 → 100 % promoted through its approvals; at each step the share
  of requests HAProxy actually served to the canary is within ±5 points of the set share, and
  no request is lost while the weights change under load;
- slow canary (TTFT P99 three times its SLO): the gate fails on the step's own histogram
  (P99 from the canary's bucket increases over the step, ``histogram_quantile``'s way), the
  rollback sets the weight back, and the canary serves nothing afterwards.

The slow canary's gate reads the backends' real histograms through the portal: both backends
are exporter targets the portal scrapes (``telemetry.receivers.scrape``) and serving endpoints
bound to acme-chat, so the criterion ``p99(serving_ttft_seconds)`` is measured by the one gate
path (stored bucket increases over the step's window, ``histogram_quantile``'s way).
"""

from __future__ import annotations

import re
import time
import urllib.request
from datetime import timedelta

import pytest
from django.utils import timezone

from rollout.models import PlanState
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.commands import plan_command
from rollout.services.router_dispatch import router_intents_sweep
from rollout.services.transitions import plan_start
from telemetry.models import ExporterTarget, ServingBinding
from telemetry.read import serving_window
from telemetry.receivers.scrape import exporter_scrape
from tests.inference_servers import (
    InferenceBackend,
    LatencyProfile,
    LoadGenerator,
    lost,
    share_served,
)
from tests.rollout.conftest import rev
from tests.servers import HAProxyServer, haproxy_binary, prometheus_binary

SLO = 0.02  # TTFT P99 objective, seconds
HEALTHY = LatencyProfile(ttft_median=0.004, sigma=0.3, seed=3)
SLOW = LatencyProfile(ttft_median=3 * SLO / 2.0, sigma=0.3, seed=4)  # P99 ≈ 3 × SLO


def _gateway(tmp_path, canary_profile: LatencyProfile):
    if haproxy_binary() is None:
        pytest.skip("haproxy is not installed (make test installs it)")
    baseline = InferenceBackend("baseline", profile=HEALTHY)
    canary = InferenceBackend("canary", profile=canary_profile)
    proxy = HAProxyServer(
        tmp_path / "gateway", {"baseline": baseline.port, "canary": canary.port}
    ).start()
    return proxy, baseline, canary


@pytest.fixture
def healthy_gateway(tmp_path):
    proxy, baseline, canary = _gateway(tmp_path, HEALTHY)
    yield proxy, baseline, canary
    proxy.stop()
    baseline.stop()
    canary.stop()


@pytest.fixture
def slow_gateway(tmp_path):
    proxy, baseline, canary = _gateway(tmp_path, SLOW)
    yield proxy, baseline, canary
    proxy.stop()
    baseline.stop()
    canary.stop()


def routed(plan_factory, proxy, **kwargs):
    from rollout.models import TrafficRouter

    router = TrafficRouter.objects.create(
        name="edge",
        kind="haproxy",
        haproxy_address=proxy.address,
        haproxy_backend="llm",
        haproxy_source_server="baseline",
        haproxy_target_server="canary",
        # The step's clock starts once HAProxy's counters show the share served over 5 s.
        split_window_seconds=5,
        split_min_requests=100,
    )
    plan = plan_factory(**kwargs)
    item = plan.workloads.get(workload__name="acme-chat")
    item.router = router
    item.save(update_fields=["router"])
    return plan


def promote(plan, users) -> None:
    plan_command(command="promote", plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_command(
        command="approve", plan_id=plan.pk, actor=Actor(users["approver"]), revision=rev(plan)
    )
    plan.refresh_from_db()


def measure(run, *, now=None) -> str:
    """One analysis beat as ``rollout.measure_analyses`` runs it: the measurement (in its
    transaction), then the router calls it intended (an automatic rollback) sent after it."""
    phase = analysis_run_step(run_id=run.pk, now=now)
    router_intents_sweep()
    return phase


def split_served(plan, run, *, timeout: float = 30.0) -> None:
    """Re-read the router as the analysis beat does until the served split confirms the step
    (its analysis clock starts then, never at the weights' read-back)."""
    from rollout.services.router_watch import plan_routers_reread

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        plan_routers_reread(plan_id=plan.pk)
        run.refresh_from_db()
        if run.traffic_at is not None:
            return
        time.sleep(1.0)
    raise AssertionError("the served split never confirmed the step")


def window(load: LoadGenerator, count: int, *, since: float, timeout: float = 30.0) -> list:
    """The next ``count`` requests that *started* after ``since`` (in flight ones excluded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fresh = [o for o in list(load.outcomes) if o.at >= since]
        if len(fresh) >= count:
            return fresh[:count]
        time.sleep(0.05)
    raise AssertionError(f"only {len(fresh)} requests in {timeout} s")


def test_the_backends_answer_completions_and_export_vllm_histograms(healthy_gateway):
    proxy, _baseline, canary = healthy_gateway
    outcomes = LoadGenerator(f"http://127.0.0.1:{canary.port}", concurrency=2).run(50)
    assert [o.status for o in outcomes] == [200] * 50
    text = urllib.request.urlopen(f"http://127.0.0.1:{canary.port}/metrics").read().decode()
    # One TTFT and one end-to-end latency per request, one TPOT per token after the first
    tokens = canary.profile.tokens
    for family, count in (
        ("vllm:time_to_first_token_seconds_bucket", 50),
        ("vllm:e2e_request_latency_seconds_bucket", 50),
        ("vllm:time_per_output_token_seconds_bucket", 50 * (tokens - 1)),
    ):
        line = rf'^{family}{{model_name="llama-3-8b",le="\+Inf"}} {count}$'
        assert re.search(line, text, re.M), family
    assert 'vllm:request_success_total{finished_reason="length",model_name="llama-3-8b"} 50' in text


def test_a_healthy_canary_is_promoted_and_haproxy_serves_each_set_share(
    plan_factory, users, healthy_gateway
):
    proxy, _baseline, _canary = healthy_gateway
    plan = routed(plan_factory, proxy, gray_steps=[5, 25, 50, 100])
    load = LoadGenerator(proxy.url, concurrency=4, rate=400, limit=20_000).start()
    measured = {}
    try:
        plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
        promote(plan, users)  # pilot → gray 5 %, the weights change under load
        for step in (5, 25, 50, 100):
            assert (plan.state, plan.current_step_percent) == (PlanState.RUNNING, step)
            served = window(load, 400, since=time.monotonic())
            measured[step] = share_served(served, "canary")
            promote(plan, users)
        assert plan.current_phase == "full"
        promote(plan, users)
        assert plan.state == PlanState.SUCCEEDED
    finally:
        outcomes = load.stop()
    print(f"canary share served per step: {measured}; requests {len(outcomes)}")
    for step, share in measured.items():
        assert abs(share - step) <= 5, (step, share)
    assert lost(outcomes) == [], lost(outcomes)[:3]


def scraped_backends(clusters, workloads, canary, baseline, settings) -> list:
    """Both backends as exporter targets of their clusters (the portal scrapes their
    ``/metrics``), each bound to its cluster's acme-chat: the canary on the target, the
    baseline on the source. The engines label ``model_name`` only; the target's ``node``
    names the endpoint (``llama-3-8b@canary``), as ``instance`` would from Prometheus."""
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    targets = []
    for side, backend, cluster in (
        ("canary", canary, "unified"),
        ("baseline", baseline, "legacy"),
    ):
        targets.append(
            ExporterTarget.objects.create(
                name=f"vllm-{side}",
                url=f"http://127.0.0.1:{backend.port}/metrics",
                cluster=clusters[cluster],
                node=side,
                timeout_seconds=5,
            )
        )
        ServingBinding.objects.create(
            workload=workloads[f"{cluster}:acme-chat"], model_name="llama-3-8b", instance=side
        )
    return targets


def scrape(targets) -> None:
    for target in targets:
        result = exporter_scrape(target=target)
        assert result["ok"], result["error"]


def test_a_slow_canary_fails_its_gate_on_its_own_histograms_and_the_rollback_takes_its_traffic(
    plan_factory, users, slow_gateway, clusters, workloads, settings
):
    proxy, baseline, canary = slow_gateway
    targets = scraped_backends(clusters, workloads, canary, baseline, settings)
    spec = {
        "metric": "serving_ttft_seconds",
        "aggregation": "p99",
        "threshold": SLO,
        "count": 1,
        "interval_seconds": 10,
        "initial_delay_seconds": 0,
        "window_seconds": 60,
        "min_samples": 2,
    }
    plan = routed(plan_factory, proxy, gray_steps=[25, 100], criteria={"gray": [spec]})
    load = LoadGenerator(proxy.url, concurrency=4, rate=300, limit=20_000).start()
    try:
        plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
        scrape(targets)  # before the step: history the step's window must not read
        promote(plan, users)  # gray 25 %: the slow canary takes a quarter of the requests
        run = plan.current_gate.runs.get()
        assert run.traffic_at is None  # weights read back; the split is not seen yet
        split_served(plan, run)
        scrape(targets)
        served = window(load, 300, since=time.monotonic())
        assert abs(share_served(served, "canary") - 25) <= 5
        scrape(targets)
        # The one gate path: P99 from the canary's stored bucket increases over the step
        assert measure(run) == "failed"
        measurement = run.metrics.get().measurements.get()
        assert measurement.value > 2 * SLO, measurement.reason
        assert measurement.samples >= 2 and "p99(serving_ttft_seconds)" in measurement.reason
        plan.refresh_from_db()
        assert plan.state == PlanState.ROLLED_BACK
        assert proxy.weight("canary") == 0
        after = window(load, 300, since=time.monotonic())
        assert share_served(after, "canary") == 0.0
    finally:
        outcomes = load.stop()
    assert lost(outcomes) == []
    # The step's own figure is the one its histogram gives between the in-step scrapes.
    stored = serving_window(
        cluster_id=clusters["unified"].pk,
        workload_id=workloads["unified:acme-chat"].pk,
        start=measurement.window_start,
        end=measurement.window_end,
    )
    assert stored.ttft["p99"] == pytest.approx(measurement.value)
    assert "llama-3-8b@canary" in stored.endpoints
    assert measurement.window_start >= run.traffic_at  # nothing from before the step


def prometheus_config(web_url: str, token: str, canary, baseline) -> str:
    """Prometheus scrapes both backends every second and remote-writes each to its cluster:
    the canary's series to the target (uni), the baseline's to the source (old)."""
    writes = "".join(
        f"""
  - url: "{web_url}/api/v1/telemetry/remote-write/?cluster={cluster}"
    authorization:
      type: Bearer
      credentials: "{token}"
    remote_timeout: 10s
    metadata_config:
      send: false
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 100ms
      max_backoff: 1s
      max_shards: 2
    write_relabel_configs:
      - source_labels: [job]
        regex: {job}
        action: keep
"""
        for job, cluster in (("canary", "uni"), ("baseline", "old"))
    )
    return f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: canary
    static_configs:
      - targets: ["127.0.0.1:{canary.port}"]
  - job_name: baseline
    static_configs:
      - targets: ["127.0.0.1:{baseline.port}"]
remote_write:{writes}"""


def wait_for(predicate, timeout: float, what: str, context=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}; {context()}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_slow_canary_fails_on_the_histograms_prometheus_remote_wrote(
    plan_factory, users, slow_gateway, clusters, workloads, tmp_path, settings
):
    """Debian's Prometheus scrapes both backends and remote-writes to the portal's live server;
    the gate (trusting that Prometheus' token) fails on the canary's step histograms. Then a
    second run reads the target as a PromQL source (the same Prometheus) and fails again."""
    from accounts.services.tokens import token_create
    from rollout.services.transitions import plan_retry
    from telemetry.models import PromQLDataSource, Sample
    from telemetry.receivers.twin import catalogue_sync
    from tests.servers import PrometheusServer, WebServer
    from tests.workers import database_url_for_subprocess

    if prometheus_binary() is None:
        pytest.skip("prometheus is not installed (Debian package `prometheus`)")
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    proxy, baseline, canary = slow_gateway
    catalogue_sync()
    issued = token_create(name="prometheus", scopes=["ingest"])
    for backend, cluster in ((canary, "unified"), (baseline, "legacy")):
        ServingBinding.objects.create(
            workload=workloads[f"{cluster}:acme-chat"],
            model_name="llama-3-8b",
            instance=f"127.0.0.1:{backend.port}",
        )
    key = f"llama-3-8b@127.0.0.1:{canary.port}"
    spec = {
        "metric": "serving_ttft_seconds",
        "aggregation": "p99",
        "threshold": SLO,
        "count": 1,
        "interval_seconds": 10,
        "initial_delay_seconds": 0,
        "window_seconds": 60,
        "min_samples": 3,
        # The store's values from that Prometheus' token; on a PromQL source, the source.
        "trusted_sources": [f"token:{issued.token.pk}", "datasource"],
    }
    plan = routed(plan_factory, proxy, gray_steps=[25, 100], criteria={"gray": [spec]})
    web = WebServer(
        env={"DATABASE_URL": database_url_for_subprocess(), "PORTAL_VAR_DIR": str(tmp_path)},
        workers=1,
    )
    prometheus = PrometheusServer(
        tmp_path / "prometheus", prometheus_config(web.url, issued.plaintext, canary, baseline)
    )
    load = LoadGenerator(proxy.url, concurrency=4, rate=300, limit=20_000).start()
    written = lambda after: Sample.objects.filter(  # noqa: E731
        entity__key=key, metric__name="serving_ttft_seconds_count", ts__gt=after
    ).exists()
    try:
        prometheus.start()
        # Prometheus scrapes and remote-writes the canary before the step starts
        wait_for(
            lambda: written(timezone.now() - timedelta(days=1)),
            60,
            "the first remote-written canary sample",
            lambda: web.output[-2000:] + prometheus.log.read_text()[-2000:],
        )
        plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
        promote(plan, users)  # gray 25 %
        run = plan.current_gate.runs.get()
        split_served(plan, run)
        served = window(load, 600, since=time.monotonic())  # ≈ 2 s: several scrapes
        assert abs(share_served(served, "canary") - 25) <= 5
        time.sleep(4)  # at least four scrapes inside the step
        end = timezone.now()
        wait_for(
            lambda: written(end),
            60,
            "remote-written canary samples past the step's window",
            lambda: web.output[-2000:] + prometheus.log.read_text()[-2000:],
        )
        outcome = measure(run, now=end)
        measurement = run.metrics.get().measurements.get()
        assert outcome == "failed", measurement.reason
        assert measurement.value > 2 * SLO, measurement.reason
        assert measurement.samples >= 3
        plan.refresh_from_db()
        assert plan.state == PlanState.ROLLED_BACK
        assert proxy.weight("canary") == 0
        after = window(load, 300, since=time.monotonic())
        assert share_served(after, "canary") == 0.0
        # The second run: the target cluster read as a PromQL source (the same Prometheus);
        # retry puts the step's traffic back on and the gate reads
        # histogram_quantile(0.99, sum by (le) (rate(…_bucket[w]))) over the new step.
        PromQLDataSource.objects.create(cluster=clusters["unified"], url=prometheus.url)
        plan_retry(plan_id=plan.pk, actor=Actor(users["operator"]))
        plan.refresh_from_db()
        assert proxy.weight("canary") == 25
        rerun = plan.current_gate.runs.order_by("-id").first()
        assert rerun.pk != run.pk
        split_served(plan, rerun)
        served = window(load, 600, since=time.monotonic())
        assert abs(share_served(served, "canary") - 25) <= 5
        time.sleep(4)
        end = timezone.now()
        time.sleep(1.5)  # Prometheus has scraped past the window's end
        outcome = measure(rerun, now=end)
        promql_measurement = rerun.metrics.get().measurements.get()
        assert outcome == "failed", promql_measurement.reason
        assert promql_measurement.value > 2 * SLO
        plan.refresh_from_db()
        assert plan.state == PlanState.ROLLED_BACK
        assert proxy.weight("canary") == 0
        # The baseline's series reached the source cluster through the same Prometheus.
        assert Sample.objects.filter(
            entity__key=f"llama-3-8b@127.0.0.1:{baseline.port}",
            entity__cluster=clusters["legacy"],
        ).exists()
    finally:
        outcomes = load.stop()
        prometheus.stop()
        web.stop()
    assert lost(outcomes) == []
