"""seed_migrations: three plans produced by the workflow on the twin's data, idempotently."""

from __future__ import annotations

from django.core.management import call_command

from rollout.models import AuditEntry, Criterion, MigrationPlan
from rollout.selectors import traffic_shares_for_cluster


def test_seed_produces_completed_awaiting_and_rolled_back_plans(db, tmp_path):
    call_command("seed_demo", password="demo-pass-123", stdout=open(tmp_path / "o", "w"))
    call_command("seed_twin", cards=256, stdout=open(tmp_path / "o", "w"))
    call_command("seed_migrations", stdout=open(tmp_path / "o", "w"))
    states = dict(MigrationPlan.objects.values_list("tenant__slug", "state"))
    assert states == {
        "acme-bank": "succeeded",
        "starlight-media": "awaiting_approval",
        "zhiyuan-ai": "rolled_back",
    }
    # The moved training job's pilot gate passed its first measurement against what the twin
    # expects of it on the target's accelerator (not a raw H100 vs Ascend ratio)
    acme = MigrationPlan.objects.get(tenant__slug="acme-bank")
    pilot = acme.gates.get(phase__kind="pilot").runs.get(status="successful")
    throughput = pilot.metrics.get(name="pilot-throughput")
    first = throughput.measurements.order_by("seq").first()
    assert first.outcome == "successful", first.reason
    assert throughput.expected_scale and "twin training model" in throughput.expected_note
    assert "expected" in first.reason and "measured" in first.reason
    rolled = MigrationPlan.objects.get(tenant__slug="zhiyuan-ai")
    failed = rolled.current_gate.runs.get(status="failed").metrics.get(status="failed")
    measured = failed.measurements.order_by("-pk").first()
    # The gates judge TTFT/TPOT; the twin's own TPOT P99 broke the strict one.
    assert failed.name == "tpot-p99"
    assert measured.value > measured.threshold
    # ... read from the serving histograms, the path real engines' metrics take
    assert "p99(serving_tpot_seconds)" in measured.reason
    decisive = Criterion.objects.filter(dry_run=False, phase__kind__in=["gray", "full"])
    assert set(decisive.values_list("metric", flat=True)) == {
        "serving_ttft_seconds",
        "serving_tpot_seconds",
    }
    assert not Criterion.objects.filter(metric__regex=r"^inference_.*_p99_seconds$").exists()
    # Traffic went back to the last stable step: none of the gray workload has moved.
    shares = traffic_shares_for_cluster(cluster_id=rolled.target_cluster_id)
    assert shares.get("chat-llama-2-70b-001", 0.0) == 0.0
    # The seeded history's ended hours are in the cost ledger (the demo keeps minute detail
    # two hours: unclosed, the cost page's default window would be refused).
    from cost.models import LedgerHour

    closed = set(LedgerHour.objects.values_list("cluster__name", flat=True))
    assert {"legacy-h100", "unified-demo"} <= closed
    rows = AuditEntry.objects.count()
    call_command("seed_migrations", stdout=open(tmp_path / "o", "w"))
    assert MigrationPlan.objects.count() == 3 and AuditEntry.objects.count() == rows


def test_a_long_seed_under_the_demos_retention_leaves_the_default_cost_window_billable(
    db, tmp_path, settings, monkeypatch
):
    """A full-size demo seeds for many minutes, and the portal then keeps minute detail two
    hours: every hour of the seeded history must be closed by then, or the cost page's
    default 24 h window is refused ("... never closed, and their minute data is pruned")."""
    from datetime import timedelta

    from django.utils import timezone

    from cost.hours import floor_hour, hours_with_data, is_closed
    from cost.models import LedgerHour
    from cost.selectors import clusters_cost, refuse_uncovered
    from inventory.models import Cluster
    from simulation.management.commands import seed_migrations

    settings.TELEMETRY_RETENTION = {  # the demo's (PORTAL_DEMO=1)
        **settings.TELEMETRY_RETENTION,
        "raw_accelerator_hours": 1,
        "raw_other_hours": 2,
        "rollup_minute_days": 1,
        "frame_minute_hours": 2,
        "frame_15min_hours": 12,
    }
    call_command("seed_demo", password="demo-pass-123", stdout=open(tmp_path / "o", "w"))
    call_command("seed_twin", cards=256, stdout=open(tmp_path / "o", "w"))
    # The seeding itself takes 70 minutes of wall time (the command's own clock is mocked
    # while it seeds; this is the wall clock it reads before and after).
    real_now, late = timezone.now, [timedelta(0)]
    monkeypatch.setattr(timezone, "now", lambda: real_now() + late[0])
    seed_all = seed_migrations.Command._seed_all

    def slow_seed_all(self) -> None:
        seed_all(self)
        late[0] = timedelta(minutes=70)

    monkeypatch.setattr(seed_migrations.Command, "_seed_all", slow_seed_all)
    call_command("seed_migrations", stdout=open(tmp_path / "o", "w"))
    now = timezone.now()
    for cluster in Cluster.objects.filter(name__in=["legacy-h100", "unified-demo"]):
        with_data = hours_with_data(cluster, floor_hour(now - timedelta(hours=24)), now)
        closed = set(LedgerHour.objects.filter(cluster=cluster).values_list("hour", flat=True))
        assert with_data and [h for h in with_data if is_closed(h, now) and h not in closed] == []
    costs = refuse_uncovered(clusters_cost(now - timedelta(hours=24), now))
    assert all(c.ledger is not None and c.ledger.covered_seconds > 0 for c in costs if c.asset)
