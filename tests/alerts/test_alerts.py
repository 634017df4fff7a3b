"""Alerts: default rules, evaluation over the store, triage actions, the page, CSV and the API."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from alerts import evaluate as evaluate_module
from alerts.defaults import DEFAULT_RULES, alert_rules_ensure
from alerts.evaluate import alerts_evaluate
from alerts.models import Alert, AlertRule
from alerts.services import alert_acknowledge
from alerts.tasks import evaluate_alerts
from telemetry.models import Entity, MetricDefinition
from telemetry.receivers.twin import layout_for_keys, samples_write
from telemetry.store.compaction import rollups_compact
from telemetry.store.frames import frames_write

# Not minute-aligned on purpose: the rollup window is widened to whole minutes.
NOW = datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC)
MIN = timedelta(minutes=1)
SEC = timedelta(seconds=1)


def write(metric: str, entity: Entity, points: list[tuple[datetime, float]]) -> None:
    metric_id = MetricDefinition.objects.get(name=metric).id
    with transaction.atomic():
        samples_write([(metric_id, entity.id, ts.timestamp(), value) for ts, value in points])


def every_30s(value: float, *, end: datetime = NOW, minutes: int = 5) -> list:
    return [(end - timedelta(seconds=30 * i), value) for i in range(minutes * 2)]


def alerts_of(rule: str, entity: Entity):
    return Alert.objects.filter(rule__name=rule, entity=entity)


# --- default rules ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_default_rules_cover_the_playbook_and_install_idempotently(rules):
    by_metric = {r.metric: r for r in rules.values()}
    assert by_metric["twin_tick_lag_seconds"].entity_kind == "cluster"
    assert by_metric["exporter_scrape_up"].entity_kind == "exporter"
    assert by_metric["link_status"].severity == "critical"
    allocation = rules["hbm-allocation-failures"].runbook
    assert "fragmentation" in allocation and "pre-allocation" in allocation
    assert "CXL/UB" in allocation
    latency = rules["link-congested"].runbook
    assert all(w in latency for w in ("optical module", "routing table", "congestion"))
    throughput = rules["training-communication-high"].runbook
    assert all(w in throughput for w in ("MTU", "flow control", "PCIe"))
    burn = rules["slo-fast-burn"].runbook
    assert all(w in burn for w in ("hot-spot", "prefetch", "NUMA"))

    # An operator tunes a threshold and someone edits the runbook; a re-run keeps the tuning
    # and restores the shipped text, and creates nothing new.
    AlertRule.objects.filter(name="link-congested").update(threshold=0.7, runbook="x")
    assert alert_rules_ensure() == {"created": 0, "updated": 1}
    assert alert_rules_ensure() == {"created": 0, "updated": 0}
    tuned = AlertRule.objects.get(name="link-congested")
    assert tuned.threshold == 0.7 and tuned.runbook == latency
    assert AlertRule.objects.filter(name__in=[r.name for r in DEFAULT_RULES]).count() == len(
        DEFAULT_RULES
    )


# --- evaluation -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_hot_card_opens_warning_and_critical_alerts_with_runbooks(rules, cards):
    hot, cool, _ = cards
    write("accelerator_temperature_celsius", hot, every_30s(97.0))
    write("accelerator_temperature_celsius", cool, every_30s(60.0))
    result = alerts_evaluate(now=NOW)

    assert result["opened"] == 2
    warning = alerts_of("accelerator-temperature-high", hot).get()
    assert (warning.severity, warning.state) == ("warning", "firing")
    assert warning.value == pytest.approx(97.0)
    assert warning.first_seen == warning.last_seen == NOW
    assert warning.tenant is None
    assert "sn0/r0/n0/c0" in warning.message and "97" in warning.message
    assert "85" in warning.message
    assert "cooling" in warning.rule.runbook
    critical = alerts_of("accelerator-temperature-critical", hot).get()
    assert critical.severity == "critical"
    assert not Alert.objects.filter(entity=cool).exists()


@pytest.mark.django_db
def test_re_evaluation_refreshes_the_open_alert_instead_of_duplicating(rules, cards):
    hot = cards[0]
    write("accelerator_temperature_celsius", hot, every_30s(97.0))
    alerts_evaluate(now=NOW)
    alert_acknowledge(alert=alerts_of("accelerator-temperature-high", hot).get(), user=None)
    later = NOW + timedelta(seconds=30)
    write("accelerator_temperature_celsius", hot, [(later, 99.0)])
    result = alerts_evaluate(now=later)

    alert = alerts_of("accelerator-temperature-critical", hot).get()
    assert result["opened"] == 0 and result["refreshed"] == 2
    assert alert.first_seen == NOW and alert.last_seen == later
    assert alert.value == pytest.approx(99.0)
    assert "99" in alert.message
    acknowledged = alerts_of("accelerator-temperature-high", hot).get()
    assert acknowledged.state == "acknowledged" and acknowledged.last_seen == later


@pytest.mark.django_db
def test_an_alert_resolves_when_the_value_recovers(rules, cards):
    hot = cards[0]
    write("accelerator_temperature_celsius", hot, every_30s(97.0))
    alerts_evaluate(now=NOW)
    alert_acknowledge(alert=alerts_of("accelerator-temperature-high", hot).get(), user=None)
    recovered_at = NOW + timedelta(minutes=10)
    write("accelerator_temperature_celsius", hot, every_30s(70.0, end=recovered_at))
    result = alerts_evaluate(now=recovered_at)

    assert result["resolved"] == 2
    for alert in Alert.objects.filter(entity=hot):
        assert alert.state == "resolved"  # the acknowledged one too
        assert alert.resolved_at == recovered_at and alert.resolved_by is None
    # Still cool later: nothing reopens.
    assert alerts_evaluate(now=recovered_at + timedelta(seconds=30))["opened"] == 0


@pytest.mark.django_db
def test_compacted_rollups_and_the_raw_tail_after_the_watermark_count_once(rules, cards):
    hot = cards[0]
    # 91 °C at NOW rising by 1 per 30 s into the past: 10 samples from 11:56:00 to 12:00:30.
    write(
        "accelerator_temperature_celsius", hot, [(NOW - 30 * i * SEC, 91.0 + i) for i in range(10)]
    )
    expected = {"accelerator-temperature-high": 95.5, "accelerator-temperature-critical": 96.0}

    def values() -> dict[str, float]:
        alerts_evaluate(now=NOW)
        return dict(Alert.objects.filter(entity=hot).values_list("rule__name", "value"))

    assert values() == pytest.approx(expected)  # nothing compacted yet: all from raw
    marks = rollups_compact(now=NOW.timestamp())
    assert NOW - 5 * MIN < marks[60] < NOW  # the window is now split at the watermark
    assert values() == pytest.approx(expected)


@pytest.mark.django_db
def test_no_data_in_the_window_changes_nothing_and_opens_nothing(rules, cards):
    hot, silent, _ = cards
    write("accelerator_temperature_celsius", hot, every_30s(97.0))
    alerts_evaluate(now=NOW)
    # An hour later the card reports nothing: its alert stays open, as it was.
    result = alerts_evaluate(now=NOW + timedelta(hours=1))
    alert = alerts_of("accelerator-temperature-high", hot).get()
    assert (alert.state, alert.last_seen, alert.value) == ("firing", NOW, pytest.approx(97.0))
    assert result["resolved"] == 0 and result["refreshed"] == 0
    # A card whose only hot data is older than the window gets no alert either.
    write("accelerator_temperature_celsius", silent, every_30s(99.0, end=NOW - timedelta(hours=2)))
    alerts_evaluate(now=NOW)
    assert not Alert.objects.filter(entity=silent).exists()


@pytest.mark.django_db
def test_last_value_rules_use_the_newest_sample(rules, cluster):
    flapped = Entity.objects.create(cluster=cluster, kind="link", key="sn0/r0/up0")
    healed = Entity.objects.create(cluster=cluster, kind="link", key="sn0/r0/up1")
    write("link_status", flapped, [(NOW - timedelta(seconds=100), 1.0), (NOW, 0.0)])
    write("link_status", healed, [(NOW - timedelta(seconds=100), 0.0), (NOW, 1.0)])
    alerts_evaluate(now=NOW)
    down = alerts_of("link-down", flapped).get()
    assert (down.severity, down.value) == ("critical", 0.0)
    assert "optical module" in down.rule.runbook
    assert not alerts_of("link-down", healed).exists()


@pytest.mark.django_db
def test_mean_rules_average_the_window_and_copy_the_workload_tenant(rules, cluster, workloads):
    pool = Entity.objects.create(cluster=cluster, kind="memory_pool", key="sn0")
    write(
        "memory_pool_allocation_failures_per_second",
        pool,
        [(NOW - timedelta(seconds=60 * i), 2.0 if i == 2 else 0.0) for i in range(5)],
    )
    chat = Entity.objects.create(
        cluster=cluster,
        kind="workload",
        key="acme-chat",
        workload=workloads["chat"],
        tenant=workloads["chat"].tenant,
    )
    write("inference_slo_attainment_ratio", chat, every_30s(0.80))
    alerts_evaluate(now=NOW)

    allocation = alerts_of("hbm-allocation-failures", pool).get()
    assert allocation.value == pytest.approx(0.4)  # one bad minute in five
    assert allocation.severity == "critical"
    burn = alerts_of("slo-fast-burn", chat).get()
    assert burn.tenant.slug == "acme" and burn.severity == "critical"


def write_frames(metric: str, layout, points: list[tuple[datetime, list[float]]]) -> None:
    metric_id = MetricDefinition.objects.get(name=metric).id
    with transaction.atomic():
        for ts, values in points:
            frames_write(layout=layout, values={metric_id: np.asarray(values)}, ts=ts.timestamp())


@pytest.mark.django_db
def test_dense_frames_from_the_twin_open_and_resolve_alerts_like_rows(rules, cluster, cards):
    # The twin writes per-card metrics as frames; an exporter-fed card writes rows. One run
    # of the evaluator must treat both alike. c2 has no value (NaN) in any frame: no data.
    keys = ["sn1/r0/n0/c0", "sn1/r0/n0/c1", "sn1/r0/n0/c2"]
    layout = layout_for_keys(cluster, "accelerator", keys)
    twin_hot, twin_cool, twin_silent = (Entity.objects.get(key=k) for k in keys)
    write_frames(
        "accelerator_temperature_celsius",
        layout,
        [(ts, [97.0, 60.0, np.nan]) for ts, _ in every_30s(0)],
    )
    write("accelerator_temperature_celsius", cards[0], every_30s(96.0))
    alerts_evaluate(now=NOW)

    alert = alerts_of("accelerator-temperature-high", twin_hot).get()
    assert alert.value == pytest.approx(97.0) and "sn1/r0/n0/c0" in alert.message
    assert alerts_of("accelerator-temperature-critical", twin_hot).get().value == 97.0
    assert alerts_of("accelerator-temperature-high", cards[0]).exists()
    assert not Alert.objects.filter(entity__in=[twin_cool, twin_silent]).exists()

    later = NOW + timedelta(minutes=10)
    write_frames(
        "accelerator_temperature_celsius",
        layout,
        [(ts, [70.0, 60.0, np.nan]) for ts, _ in every_30s(0, end=later)],
    )
    alerts_evaluate(now=later)
    assert set(Alert.objects.filter(entity=twin_hot).values_list("state", flat=True)) == {
        "resolved"
    }
    # The exporter card sent nothing since: its alert is left as it was.
    assert alerts_of("accelerator-temperature-high", cards[0]).get().state == "firing"


@pytest.mark.django_db
def test_last_value_and_tenant_come_from_frames_too(rules, cluster, workloads):
    links = layout_for_keys(cluster, "link", ["sn0/r0/up0", "sn0/r0/up1", "sn0/r0/up2"])
    # up1's newest frame has no value for it, so its last value is the older 0 (down).
    write_frames(
        "link_status",
        links,
        [(NOW - timedelta(seconds=100), [1.0, 0.0, 0.0]), (NOW, [0.0, np.nan, 1.0])],
    )
    chat = Entity.objects.create(
        cluster=cluster, kind="workload", key="acme-chat", tenant=workloads["chat"].tenant
    )
    served = layout_for_keys(cluster, "workload", ["acme-chat"])
    write_frames("inference_slo_attainment_ratio", served, [(NOW, [0.5])])
    alerts_evaluate(now=NOW)

    down = Alert.objects.filter(rule__name="link-down").values_list("entity__key", "value")
    assert sorted(down) == [("sn0/r0/up0", 0.0), ("sn0/r0/up1", 0.0)]
    assert alerts_of("slo-fast-burn", chat).get().tenant.slug == "acme"


@pytest.mark.django_db
def test_evaluation_runs_a_constant_number_of_queries_whatever_the_entity_count(
    rules, cluster, monkeypatch
):
    # The read API looks up PromQL data sources once per few seconds; load that lookup now
    # so it is in neither count.
    from telemetry.read.promql import reads

    monkeypatch.setattr(reads, "SOURCES_TTL_SECONDS", 3600.0)
    reads.sources_cache_clear()
    reads.sources()

    def run(count: int, prefix: str) -> tuple[int, int]:
        entities = [
            Entity.objects.create(cluster=cluster, kind="accelerator", key=f"{prefix}/c{i}")
            for i in range(count)
        ]
        metric_id = MetricDefinition.objects.get(name="accelerator_temperature_celsius").id
        rows = [(metric_id, e.id, ts.timestamp(), v) for e in entities for ts, v in every_30s(97)]
        with transaction.atomic():
            samples_write(rows)
        with CaptureQueriesContext(connection) as opening:
            alerts_evaluate(now=NOW)
        with CaptureQueriesContext(connection) as refreshing:
            alerts_evaluate(now=NOW)
        Alert.objects.all().delete()
        Entity.objects.filter(key__startswith=prefix).delete()
        return len(opening), len(refreshing)

    assert run(3, "small") == run(40, "large")


@pytest.mark.django_db
def test_a_racing_evaluation_updates_the_alert_it_collides_with(rules, cards, monkeypatch):
    hot = cards[0]
    write("accelerator_temperature_celsius", hot, every_30s(97.0))
    alerts_evaluate(now=NOW)
    later = NOW + timedelta(seconds=30)
    write("accelerator_temperature_celsius", hot, [(later, 100.0)])

    # Simulate the race: this run reads the open alerts before the other run's commit, so it
    # believes none is open and tries to insert a second one.
    real = evaluate_module._open_alert_ids
    calls: list[str] = []

    def stale_first_read(rule):
        calls.append(rule.name)
        if rule.name == "accelerator-temperature-critical" and calls.count(rule.name) == 1:
            return {}
        return real(rule)

    monkeypatch.setattr(evaluate_module, "_open_alert_ids", stale_first_read)
    alerts_evaluate(now=later)

    alert = alerts_of("accelerator-temperature-critical", hot).get()  # still exactly one
    assert alert.first_seen == NOW and alert.last_seen == later
    assert alert.value == pytest.approx(100.0)


@pytest.mark.django_db
def test_a_rule_whose_metric_is_unknown_is_skipped(rules):
    AlertRule.objects.filter(name="twin-tick-lag").update(metric="no_such_metric")
    assert "twin-tick-lag" in alerts_evaluate(now=NOW)["skipped"]


@pytest.mark.django_db
def test_the_beat_task_evaluates(rules, cards):
    write("accelerator_temperature_celsius", cards[0], every_30s(97.0, end=datetime.now(tz=UTC)))
    result = evaluate_alerts.apply().get()
    assert result["opened"] == 2
    assert alerts_of("accelerator-temperature-critical", cards[0]).exists()
