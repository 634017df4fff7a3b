"""Serving-engine metrics in (issue 23 part 1): vLLM, SGLang and MindIE families through the
text push and remote-write, histograms stored bucket-aware, one serving endpoint per model and
instance, and a window's P99 computed from the buckets' increases."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from telemetry.families.parse import iter_text
from telemetry.models import Entity, MetricDefinition, Sample
from telemetry.read import serving_window
from telemetry.read.local.histograms import histogram_quantile
from telemetry.receivers.remote_write.service import ingest_remote_write
from telemetry.receivers.text import ingest_prometheus_text
from tests.serving_exposition import EngineMetrics
from tests.telemetry.remote_write_helpers import write_request

INSTANCE = "10.0.0.7:8000"


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, tz=UTC)


def _push(engine: EngineMetrics, t: float) -> dict:
    return ingest_prometheus_text(
        text=engine.text(), cluster_name="unified-a", node=None, source="auto", scrape_time=t
    )


def _expected_p99(before: EngineMetrics, after: EngineMetrics) -> float:
    """The P99 of the observations between two snapshots, from the bucket counts."""
    a, b = before.ttft.cumulative(), after.ttft.cumulative()
    return histogram_quantile(
        0.99, [(float(le), n2 - n1) for (le, n1), (_, n2) in zip(a, b, strict=True)]
    )


@pytest.mark.django_db
def test_a_vllm_scrape_stores_every_bucket_as_its_own_counter(cluster):
    engine = EngineMetrics(labels={"instance": INSTANCE})
    for i in range(40):
        engine.request(ttft=0.05 + i * 0.01, tpot=0.02)
    body = _push(engine, time.time())

    assert body["collapsed_same_point"] == 0 and body["refused"] == {}
    endpoint = Entity.objects.get(cluster=cluster, kind="serving_endpoint")
    assert endpoint.key == f"llama-3-8b@{INSTANCE}"
    buckets = MetricDefinition.objects.filter(name__startswith='serving_ttft_seconds_bucket{le="')
    assert buckets.count() == len(engine.ttft.bounds) + 1
    stored = dict(
        Sample.objects.filter(entity=endpoint, metric__in=buckets).values_list(
            "metric__name", "value"
        )
    )
    assert stored['serving_ttft_seconds_bucket{le="0.1"}'] == 6  # 0.05 … 0.10
    assert stored['serving_ttft_seconds_bucket{le="+Inf"}'] == 40
    success = Sample.objects.get(entity=endpoint, metric__name="serving_requests_success_total")
    assert success.value == 40  # finished_reason="stop" only; abort is the failed counter


@pytest.mark.django_db
def test_the_window_p99_comes_from_bucket_increases_across_a_restart(cluster):
    now = time.time()
    engine = EngineMetrics(labels={"instance": INSTANCE})
    for _ in range(100):
        engine.request(ttft=0.03, tpot=0.02)  # before the window: must not count
    # The window's first scrape, just inside it: exposition timestamps are milliseconds, so a
    # scrape stamped exactly at the window's start could round to just before it.
    _push(engine, now - 239.5)
    start = engine.ttft.cumulative()
    for i in range(50):
        engine.request(ttft=0.2 + i * 0.01, tpot=0.03)
    _push(engine, now - 180)
    mid = EngineMetrics(labels={"instance": INSTANCE})
    mid.__dict__.update({k: v for k, v in engine.__dict__.items()})
    engine.restart()
    for i in range(30):
        engine.request(ttft=1.5 + i * 0.1, tpot=0.04, ok=i % 10 != 0)
    _push(engine, now - 60)

    found = serving_window(
        cluster_id=cluster.pk,
        endpoint_keys=[f"llama-3-8b@{INSTANCE}"],
        start=_at(now - 240),
        end=_at(now),
    )
    # By hand: 50 observations in (0.2, 0.69], then 30 in (1.5, 4.4] after the restart.
    increases = []
    after_restart = dict(engine.ttft.cumulative())
    for (le, n0), (_, n1) in zip(start, mid.ttft.cumulative(), strict=True):
        increases.append((float(le), (n1 - n0) + after_restart[le]))
    assert found.ttft["p99"] == pytest.approx(histogram_quantile(0.99, increases))
    assert found.ttft["p99"] > 2.5  # the slow half after the restart decides the tail
    assert found.requests == 80 and found.failed == 3
    assert found.error_ratio == pytest.approx(3 / 80)
    assert found.scrapes == 3


@pytest.mark.django_db
@pytest.mark.parametrize("prefix", ["sglang:", ""])
def test_sglang_and_mindie_families_map_onto_the_same_endpoint_series(cluster, prefix):
    now = time.time()
    engine = EngineMetrics(model="qwen2-72b", prefix=prefix, labels={"instance": INSTANCE})
    _push(engine, now - 120)
    for i in range(20):
        engine.request(ttft=0.3, tpot=0.05, ok=i != 0)
    _push(engine, now - 60)

    found = serving_window(
        cluster_id=cluster.pk,
        endpoint_keys=[f"qwen2-72b@{INSTANCE}"],
        start=_at(now - 130),
        end=_at(now),
    )
    assert found.ttft["p50"] == pytest.approx(0.25 + 0.25 * 10 / 20)  # all in (0.25, 0.5]
    assert found.requests == 20 and found.failed == 1


@pytest.mark.django_db
def test_a_window_over_vllm_and_sglang_replicas_counts_each_by_its_engines_rule(cluster):
    now = time.time()
    vllm = EngineMetrics(model="mixed", labels={"instance": "10.0.0.8:8000"})
    sglang = EngineMetrics(model="mixed", prefix="sglang:", labels={"instance": "10.0.0.9:30000"})
    for engine in (vllm, sglang):
        _push(engine, now - 120)
    for i in range(20):
        vllm.request(ttft=0.3, tpot=0.05, ok=i >= 2)  # success 18 + aborted 2
        sglang.request(ttft=0.3, tpot=0.05, ok=i != 0)  # received 20, aborted 1
    for engine in (vllm, sglang):
        _push(engine, now - 60)

    found = serving_window(
        cluster_id=cluster.pk,
        endpoint_keys=["mixed@10.0.0.8:8000", "mixed@10.0.0.9:30000"],
        start=_at(now - 130),
        end=_at(now),
    )
    # SGLang's received requests count: not only vLLM's success + failed
    assert (found.requests, found.failed) == (40, 3)
    assert found.error_ratio == pytest.approx(3 / 40)


@pytest.mark.django_db
def test_remote_write_stores_the_same_buckets_as_the_text_push(cluster):
    now_ms = int(time.time() * 1000)
    engine = EngineMetrics(labels={"instance": INSTANCE})
    for i in range(10):
        engine.request(ttft=0.01 * i, tpot=0.02)
    series = []
    for sample in iter_text(engine.text()):
        labels = {"__name__": sample.name, **sample.labels, "job": "vllm"}
        series.append((labels, [(now_ms, sample.value)]))
    body = ingest_remote_write(body=write_request(series), cluster_name="unified-a")

    assert body["refused"] == {} and body["collapsed_same_point"] == 0
    endpoint = Entity.objects.get(cluster=cluster, kind="serving_endpoint")
    stored = Sample.objects.get(
        entity=endpoint, metric__name='serving_ttft_seconds_bucket{le="0.04"}'
    )
    assert stored.value == 5  # 0.00, 0.01, 0.02, 0.03 and 0.04 itself (le is ≤)


@pytest.mark.django_db
def test_a_workloads_series_selector_binds_its_pods_endpoints_and_no_others(cluster, workloads):
    now = time.time()
    chat = workloads["chat"]
    chat.series_selector = 'namespace="acme", pod=~"chat-.*"'
    chat.save(update_fields=["series_selector"])
    pods = (("acme", "chat-0"), ("acme", "chat-1"), ("panda", "chat-0"))
    engines = [
        EngineMetrics(labels={"namespace": ns, "pod": pod, "instance": f"10.1.0.{i}:8000"})
        for i, (ns, pod) in enumerate(pods)
    ]
    for engine in engines:
        _push(engine, now - 120)
    for i, engine in enumerate(engines):
        for _ in range(10 * (i + 1)):
            engine.request(ttft=0.1, tpot=0.02)
        _push(engine, now - 60)

    found = serving_window(
        cluster_id=cluster.pk, workload_id=chat.pk, start=_at(now - 130), end=_at(now)
    )
    assert set(found.per_endpoint) == {"llama-3-8b@acme/chat-0", "llama-3-8b@acme/chat-1"}
    assert found.requests == 10 + 20  # panda's chat-0 (30 requests) is not acme's


def test_a_series_selector_becomes_promql_matchers_with_host_on_the_instance():
    from telemetry.read.promql.serving import selector_matchers

    assert selector_matchers('namespace="acme", pod=~"chat-.*"') == (
        'namespace="acme",pod=~"chat-.*"'
    )
    assert selector_matchers('host="gpu-01"') == 'instance=~"gpu\\\\-01(?::[0-9]+)?"'


@pytest.mark.django_db
def test_canary_and_baseline_are_compared_over_one_window_with_the_request_split(
    cluster, workloads
):
    from telemetry.models import ServingBinding
    from telemetry.read import serving_canary_comparison

    now = time.time()
    sides = {"chat": ("10.2.0.1:8000", 0.1, 30), "asr": ("10.2.0.2:8000", 1.2, 10)}
    for name, (instance, ttft, n) in sides.items():
        ServingBinding.objects.create(
            workload=workloads[name], model_name="llama-3-8b", instance=instance
        )
        engine = EngineMetrics(labels={"instance": instance})
        _push(engine, now - 120)
        for _ in range(n):
            engine.request(ttft=ttft, tpot=0.02)
        _push(engine, now - 60)

    found = serving_canary_comparison(
        canary_cluster_id=cluster.pk,
        canary_workload_id=workloads["asr"].pk,
        baseline_cluster_id=cluster.pk,
        baseline_workload_id=workloads["chat"].pk,
        start=_at(now - 130),
        end=_at(now),
    )
    assert found.split == {"canary": 0.25, "baseline": 0.75}
    assert found.canary.per_endpoint == {"llama-3-8b@10.2.0.2:8000": 10}
    assert 1.0 < found.canary.ttft["p99"] <= 2.5 and found.baseline.ttft["p99"] <= 0.1
