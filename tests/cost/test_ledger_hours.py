"""The persisted ledger: closed hours that do not change as telemetry ages (issue 30 item 2).

Every test writes per-minute telemetry for whole past hours through the real store
(PostgreSQL), closes them with the close task's service, and reads them back through the
cost selectors, the pages and the API.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cost.hours import HOUR, HourState, WindowNotCovered, floor_hour
from cost.models import CostAssumptions, LedgerHour, LedgerLine
from cost.selectors import cluster_cost
from cost.services import ledger_hours_close
from inventory.models import Cluster, Workload
from telemetry.models import Entity, EntityKind
from telemetry.receivers.twin import samples_write
from telemetry.store.compaction import rollups_compact
from telemetry.store.retention import RetentionPolicy, telemetry_prune
from tests.cost.cost_data import make_cluster, metric
from tests.cost.test_cost_page import INPUTS

CARDS = 8


def _now() -> datetime:
    # Twenty minutes into the current hour: the hours before it are closed.
    return floor_hour(datetime.now(tz=UTC)) + timedelta(minutes=20)


def _write(cluster: Cluster, tenant, hours: list[datetime], held: dict[str, list[float]]):
    """Per minute of each hour: the cluster's scalars and each workload's cards held
    (``held[name][i]`` for minute ``i`` of all hours laid end to end)."""
    entity, _ = Entity.objects.get_or_create(
        cluster=cluster, kind=EntityKind.CLUSTER, key="cluster"
    )
    allocated = metric("cluster_utilization_allocated_ratio", "cluster")
    power = metric("cluster_power_watts", "cluster")
    cards = metric("workload_allocated_cards", "workload")
    stamps = [h.timestamp() + 60 * m for h in hours for m in range(60)]
    rows = []
    for ts in stamps:
        rows.append((allocated.pk, entity.pk, ts, 0.5))
        rows.append((power.pk, entity.pk, ts, 3_000.0))
    for name, values in held.items():
        workload, _ = Workload.objects.get_or_create(
            tenant=tenant, cluster=cluster, name=name, defaults={"kind": "training"}
        )
        w_entity, _ = Entity.objects.get_or_create(
            cluster=cluster,
            kind=EntityKind.WORKLOAD,
            key=name,
            defaults={"workload": workload, "tenant": tenant},
        )
        rows.extend((cards.pk, w_entity.pk, ts, v) for ts, v in zip(stamps, values, strict=False))
    with transaction.atomic():
        samples_write(rows)


def _hours(ledger) -> dict[float, tuple[int, int, int]]:
    return {h.start: (h.cost_cents, h.billed_cents, h.idle_cents) for h in ledger.hours}


@pytest.fixture
def priced(db):
    return CostAssumptions.objects.create(**INPUTS)


@pytest.fixture
def two_hours(priced, tenants):
    """Two closed hours, 3–5 hours ago: ``big`` holds 6 cards, ``small`` 1 card then 0."""
    now = _now()
    first = floor_hour(now) - timedelta(hours=4)
    hours = [first, first + timedelta(hours=1)]
    cluster = make_cluster("uni", Cluster.Kind.UNIFIED, cards=CARDS)
    _write(
        cluster,
        tenants["acme"],
        hours,
        {"big": [6.0] * 120, "small": [1.0] * 30 + [0.0] * 90},
    )
    return cluster, hours, now


def test_closing_persists_each_hour_once_and_billed_plus_idle_is_cost(two_hours):
    cluster, hours, now = two_hours
    counts = ledger_hours_close(now=now, clusters=[cluster])
    assert counts["closed"] == 2
    rows = list(LedgerHour.objects.filter(cluster=cluster).order_by("hour"))
    assert [r.hour for r in rows] == hours
    for row in rows:
        assert row.billed_cents + row.idle_cents == row.cost_cents
        assert row.covered_seconds == pytest.approx(HOUR, abs=60)
        assert sum(row.lines.values_list("billed_cents", flat=True)) == row.billed_cents
        assert row.revision == 0
    # A second run (a redelivered task, a second worker) writes nothing new.
    again = ledger_hours_close(now=now, clusters=[cluster])
    assert again["closed"] == again["revised"] == 0
    assert LedgerHour.objects.filter(cluster=cluster).count() == 2
    assert LedgerLine.objects.filter(hour__cluster=cluster).count() == 3  # small: hour 1 only


def test_a_worker_killed_mid_write_loses_and_duplicates_nothing(two_hours, monkeypatch):
    cluster, _hours, now = two_hours
    real = LedgerLine.objects.bulk_create

    def killed(*args, **kwargs):
        raise SystemExit("worker killed while writing the lines")

    monkeypatch.setattr(LedgerLine.objects, "bulk_create", killed)
    with pytest.raises(SystemExit):
        ledger_hours_close(now=now, clusters=[cluster])
    # The hour row written before the lines was rolled back with them.
    assert not LedgerHour.objects.filter(cluster=cluster).exists()
    monkeypatch.setattr(LedgerLine.objects, "bulk_create", real)
    assert ledger_hours_close(now=now, clusters=[cluster])["closed"] == 2
    assert ledger_hours_close(now=now, clusters=[cluster])["closed"] == 0
    assert LedgerHour.objects.filter(cluster=cluster).count() == 2


def test_the_same_closed_hour_is_the_same_cents_through_24_hours_and_7_days(two_hours):
    cluster, hours, now = two_hours
    before = cluster_cost(cluster, now - timedelta(hours=24), now, now=now).ledger
    ledger_hours_close(now=now, clusters=[cluster])
    day = cluster_cost(cluster, now - timedelta(hours=24), now, now=now).ledger
    week = cluster_cost(cluster, now - timedelta(days=7), now, now=now).ledger
    six = cluster_cost(cluster, now - timedelta(hours=6), now, now=now).ledger
    assert _hours(day) == _hours(week) == _hours(six) == _hours(before)
    assert [h.state for h in day.hours] == [HourState.CLOSED, HourState.CLOSED]
    assert [h.state for h in before.hours] == [HourState.CLOSING, HourState.CLOSING]
    assert day.cost_cents == week.cost_cents == sum(h.cost_cents for h in day.hours)
    assert day.billed_cents + day.idle_cents == day.cost_cents
    assert {w.key: w.billed_cents for w in day.workloads} == {
        w.key: w.billed_cents for w in week.workloads
    }
    # 6 + 0.5 / 2 card-hours of 8 cards: the mean cards held over the covered time.
    assert day.mean_cards_held == pytest.approx(6.25, abs=0.05)


def test_pruning_minute_rollups_does_not_change_a_closed_bill(two_hours):
    cluster, hours, now = two_hours
    rollups_compact(now=now.timestamp())
    ledger_hours_close(now=now, clusters=[cluster])
    day = cluster_cost(cluster, now - timedelta(hours=24), now, now=now)
    week = cluster_cost(cluster, now - timedelta(days=7), now, now=now)
    # Raw samples and minute rollups older than an hour are pruned; 15-minute ones remain.
    short = RetentionPolicy(
        raw_accelerator=timedelta(hours=1),
        raw_other=timedelta(hours=1),
        rollup={60: timedelta(hours=1), 900: timedelta(days=35), 3600: timedelta(days=90)},
    )
    deleted = telemetry_prune(policy=short, now=now)
    assert deleted["rollup_60"] > 0 and deleted["raw_other"] > 0
    day_after = cluster_cost(cluster, now - timedelta(hours=24), now, now=now)
    week_after = cluster_cost(cluster, now - timedelta(days=7), now, now=now)
    assert _hours(day_after.ledger) == _hours(day.ledger) == _hours(week_after.ledger)
    assert day_after.ledger.billed_cents == day.ledger.billed_cents == week.ledger.billed_cents
    assert day_after.ledger.cost_cents > 0


def test_a_window_needing_unclosed_pruned_hours_is_refused_saying_which(
    two_hours, client_as, settings
):
    cluster, hours, now = two_hours
    # Minute detail is kept only two hours (the floor): the two hours 3–5 h ago were never
    # closed, so no bill can be built for them from minute data.
    kept = settings.TELEMETRY_RETENTION
    settings.TELEMETRY_RETENTION = {**kept, "rollup_minute_days": 0, "frame_minute_hours": 2}
    with pytest.raises(WindowNotCovered) as refused:
        from cost.hours import Pricing, window_ledger
        from cost.selectors import assumptions_for, billables, inputs_of, roster

        window_ledger(
            cluster,
            now - timedelta(hours=24),
            now,
            now=datetime.now(tz=UTC),
            pricing=Pricing(inputs_of(assumptions_for(cluster)), CARDS, 500.0),
            workloads=billables(roster(cluster)),
        )
    assert refused.value.hours == hours
    message = str(refused.value)
    assert hours[0].strftime("%H:%M") in message and "pruned" in message
    response = client_as("operator").get("/api/v1/cost/clusters/?hours=24")
    assert response.status_code == 400
    assert "pruned" in response.json()["errors"]["hours"][0]
    page = client_as("operator").get("/cost/?hours=24")
    assert page.status_code == 400
    assert "This window cannot be billed" in page.content.decode()
    # Once closed (while the minute data was there), the same window bills.
    pruned = settings.TELEMETRY_RETENTION
    settings.TELEMETRY_RETENTION = kept
    ledger_hours_close(clusters=[cluster])
    settings.TELEMETRY_RETENTION = pruned
    assert client_as("operator").get("/api/v1/cost/clusters/?hours=24").status_code == 200


def test_late_data_revises_a_closed_hour_and_counts_the_revision(two_hours, tenants, client_as):
    cluster, hours, now = two_hours
    ledger_hours_close(now=now, clusters=[cluster])
    before = LedgerHour.objects.get(cluster=cluster, hour=hours[1])
    # A late push: a third workload held one card for the whole second hour.
    _write(cluster, tenants["panda"], [hours[1]], {"late": [1.0] * 60})
    counts = ledger_hours_close(now=now, clusters=[cluster])
    assert counts["revised"] == 1
    after = LedgerHour.objects.get(cluster=cluster, hour=hours[1])
    assert after.revision == 1 and after.revised_at is not None
    assert after.billed_cents > before.billed_cents
    assert after.cost_cents == before.cost_cents  # the hour is priced once, when it closed
    assert LedgerHour.objects.get(cluster=cluster, hour=hours[0]).revision == 0
    payload = client_as("operator").get("/api/v1/cost/clusters/?hours=24").json()
    ledger = next(r for r in payload["results"] if r["cluster"] == "uni")["ledger"]
    assert [h["revision"] for h in ledger["hours"]] == [0, 1]
    assert ledger["revised_hours"] == 1
    page = client_as("operator").get("/cost/?hours=24").content.decode()
    assert "(1 revised)" in page


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    held=st.lists(
        # At most 3 × 2 of 8 cards: no hour is over-committed (capping is tested elsewhere).
        st.lists(st.integers(min_value=0, max_value=CARDS // 4), min_size=4, max_size=4),
        min_size=1,
        max_size=3,
    ),
    close_first=st.booleans(),
)
def test_any_hour_reads_the_same_in_every_window_to_the_cent(priced, tenants, held, close_first):
    """Property: per-workload cards held in 15-minute steps over two closed hours; whether or
    not the hours were closed first, each hour is the same cents through 6 h, 24 h and 7 d,
    and billed + idle = cost for every hour and every window."""
    now = _now()
    first = floor_hour(now) - timedelta(hours=3)
    hours = [first, first + timedelta(hours=1)]
    name = f"prop-{Cluster.objects.count()}"
    cluster = make_cluster(name, Cluster.Kind.UNIFIED, cards=CARDS)
    series = {f"{name}-w{i}": [float(v) for v in steps for _ in range(30)] for i, steps in
              enumerate(held)}  # fmt: skip
    _write(cluster, tenants["acme"], hours, series)
    if close_first:
        ledger_hours_close(now=now, clusters=[cluster])
    windows = [timedelta(hours=6), timedelta(hours=24), timedelta(days=7)]
    ledgers = [cluster_cost(cluster, now - w, now, now=now).ledger for w in windows]
    assert _hours(ledgers[0]) == _hours(ledgers[1]) == _hours(ledgers[2])
    for ledger in ledgers:
        assert ledger.billed_cents + ledger.idle_cents == ledger.cost_cents
        assert all(h.billed_cents + h.idle_cents == h.cost_cents for h in ledger.hours)
        expected = sum(sum(steps) * 30 * 60 for steps in held)  # card-seconds held
        # Coverage is read at the hour read's step (7 s buckets): within 0.1% of the minutes.
        assert ledger.held_card_seconds == pytest.approx(expected, rel=1e-3)


@pytest.mark.parametrize("hour_of_day", range(7))  # 3600 mod 7 = 2: all seven phases of a 7 s step
def test_an_hour_counts_its_own_samples_whatever_its_phase_against_the_step(
    priced, tenants, hour_of_day
):
    """Regression: the per-hour read used a 7 s step, so in some hours the next hour's first
    sample fell into this hour's last bucket (61 observations, 1,770 of 1,800 card-seconds)."""
    now = datetime(2026, 12, 1, hour_of_day, 20, tzinfo=UTC)
    first = floor_hour(now) - timedelta(hours=3)
    cluster = make_cluster("phase", Cluster.Kind.UNIFIED, cards=CARDS)
    _write(cluster, tenants["acme"], [first, first + timedelta(hours=1)], {"w": [1.0] * 120})
    for window in (timedelta(hours=6), timedelta(days=7)):
        ledger = cluster_cost(cluster, now - window, now, now=now).ledger
        # Within one 8 s step of the read (a bucket's key is not its sample's time), never
        # a whole minute's sample too many.
        assert [h.held_card_seconds for h in ledger.hours] == pytest.approx([HOUR, HOUR], abs=8)


@pytest.mark.parametrize("hour_of_day", (12, 13))
def test_a_thirty_day_window_finds_only_the_hours_that_hold_data(priced, tenants, hour_of_day):
    """Regression: a 30-day read's 2-hour step spread an odd hour's data over the even hour
    before it, which the window then computed (and would refuse, were it pruned) as an hour."""
    from cost.hours import hours_with_data

    now = datetime(2026, 12, 1, hour_of_day, 50, tzinfo=UTC)
    hour = floor_hour(now) - timedelta(hours=2)
    cluster = make_cluster("month", Cluster.Kind.UNIFIED, cards=CARDS)
    _write(cluster, tenants["acme"], [hour], {"w": [1.0] * 60})
    assert hours_with_data(cluster, now - timedelta(days=30), now) == [hour]
