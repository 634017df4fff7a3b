"""The "allocated but idle" alert rule (issue 32 item 3): it fires on a card a scheduler job
holds while its utilization reads under the threshold for the rule's duration, not on a busy
held card nor a short lull; it resolves when the card works again or the job releases it;
the holder tenant sees it; the rule's condition is validated on the model."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from alerts.defaults import alert_rules_ensure
from alerts.evaluate import alerts_evaluate
from alerts.models import Alert, AlertRule
from telemetry.models import MetricDefinition
from telemetry.receivers.twin import samples_write
from tests.scheduling.holdings import job, site, store

pytestmark = pytest.mark.django_db
RULE = "accelerator-allocated-idle"


def _utilization(entity, values: list[float], end) -> None:
    """One reading a minute, the last at ``end``."""
    metric, _ = MetricDefinition.objects.get_or_create(
        name="accelerator_utilization_ratio", defaults={"entity_kind": "accelerator"}
    )
    last = end.timestamp()
    samples_write(
        [(metric.pk, entity.pk, last - 60 * (len(values) - 1 - i), v) for i, v in enumerate(values)]
    )


@pytest.fixture
def held(tenants):
    """Job 1 (acme) holds gpu-001 cards 0–2 for 50 minutes: card 0 idle for the last 40,
    card 1 busy, card 2 idle for 20 only. Only the allocated-idle rule is enabled."""
    alert_rules_ensure()
    AlertRule.objects.exclude(name=RULE).update(enabled=False)
    s = site(tenants)
    now = timezone.now().replace(microsecond=0)
    store(s.source, [job(1, cards={"gpu-001": [0, 1, 2]}, start=now - timedelta(minutes=50))], now)
    e = s.entities
    _utilization(e[("gpu-001", 0)], [0.9] * 10 + [0.01] * 41, now)
    _utilization(e[("gpu-001", 1)], [0.8] * 51, now)
    _utilization(e[("gpu-001", 2)], [0.9] * 30 + [0.0] * 21, now)
    return s, now


def _open(entity):
    return Alert.objects.filter(rule__name=RULE, entity=entity).exclude(state="resolved")


def test_it_fires_for_an_idle_allocated_card_and_not_for_a_busy_one(held, tenants):
    s, now = held
    assert alerts_evaluate(now=now)["opened"] == 1
    alert = _open(s.entities[("gpu-001", 0)]).get()
    assert alert.tenant_id == tenants["acme"].pk  # the holder's alert
    assert alert.value == pytest.approx(40 * 60, abs=61)  # 41 readings: 40 minutes
    assert "under 5% utilization for 40 min" in alert.message
    assert not _open(s.entities[("gpu-001", 1)]).exists()  # busy
    assert not _open(s.entities[("gpu-001", 2)]).exists()  # idle 20 min < 30


def test_the_threshold_and_the_duration_are_the_rules(held):
    s, now = held
    AlertRule.objects.filter(name=RULE).update(window_seconds=15 * 60)
    alerts_evaluate(now=now)
    assert _open(s.entities[("gpu-001", 2)]).exists()
    AlertRule.objects.filter(name=RULE).update(threshold=0.005)  # 1 % is no longer idle
    alerts_evaluate(now=now)
    assert not _open(s.entities[("gpu-001", 0)]).exists()
    assert _open(s.entities[("gpu-001", 2)]).exists()  # 0 %, still idle


def test_it_clears_when_the_card_works_again(held):
    s, now = held
    alerts_evaluate(now=now)
    card = s.entities[("gpu-001", 0)]
    later = now + timedelta(minutes=2)
    _utilization(card, [0.7, 0.7], later)
    store(s.source, [job(1, cards={"gpu-001": [0, 1, 2]}, start=now - timedelta(minutes=50))],
          later)  # fmt: skip
    assert alerts_evaluate(now=later)["resolved"] == 1
    assert Alert.objects.get(rule__name=RULE, entity=card).state == Alert.State.RESOLVED


def test_it_clears_when_the_job_releases_the_card(held):
    s, now = held
    alerts_evaluate(now=now)
    later = now + timedelta(minutes=1)
    store(s.source, [job(1, state="COMPLETED", cards={"gpu-001": [0, 1, 2]},
                         start=now - timedelta(minutes=50), end=later)], later)  # fmt: skip
    assert alerts_evaluate(now=later + timedelta(seconds=1))["resolved"] == 1


def test_no_new_readings_change_nothing(held):
    s, now = held
    alerts_evaluate(now=now)
    # Half an hour on without readings (the exporter stopped): neither recovery nor idleness.
    later = now + timedelta(minutes=30)
    store(s.source, [job(1, cards={"gpu-001": [0, 1, 2]}, start=now - timedelta(minutes=50))],
          later)  # fmt: skip
    assert alerts_evaluate(now=later)["resolved"] == 0
    assert _open(s.entities[("gpu-001", 0)]).exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [("comparator", "gt"), ("aggregation", "mean"), ("threshold", 5.0), ("threshold", 0.0),
     ("entity_kind", "node")],
)  # fmt: skip
def test_the_rule_condition_is_validated_on_the_model(field, value):
    alert_rules_ensure()
    rule = AlertRule.objects.get(name=RULE)
    rule.full_clean()  # the shipped rule is valid
    setattr(rule, field, value)
    with pytest.raises(ValidationError) as refused:
        rule.full_clean()
    assert field in refused.value.message_dict
