"""python manage.py seed_migrations: three demo plans produced by running the workflow
against the digital twin.

Needs ``seed_demo`` (logins) and ``seed_twin`` (clusters ``unified-demo`` and
``legacy-h100``) first — ``make demo`` runs them in that order. Every plan goes through the
same services the UI and API call (start, analysis steps, promotion requests, approvals by two
approvers). Before each measurement the command advances both twin runs by one tick, so every
gate measures what the twin's model produced at that traffic share — no telemetry is typed in.
Gate thresholds are the operator inputs a real plan would carry:

- ``acme-bank``: the gray gate asks for TTFT P99 and TPOT P99 (``p99`` of the serving
  histograms ``serving_ttft_seconds`` / ``serving_tpot_seconds``, the one gate path real
  engines' metrics take too) within the service's own operator targets (``slo_ttft_ms``,
  ``slo_tpot_ms``) → passes at every step; the plan completes (pilot → gray 5/25/50/100 % →
  full);
- ``starlight-media``: same gates; left in gray at 5 %, analysis passed, awaiting approval;
- ``zhiyuan-ai``: its gate demands a 10 ms TPOT P99 for a 70B-parameter chat service — below
  what decode physics allows (reading the weights alone takes longer per token) — so the first
  gray step's analysis fails on measured data and traffic rolls back.

The pilots of acme-bank and starlight-media also carry the authoring default for their moved
training job: throughput ≥ 0.9 × what the twin's model expects of it on the target's Ascend
cards from its pre-move figure on the H100s (``rollout.analysis.scaling``), and pass on their
first measurement.

Gates carry the authoring defaults (``rollout.services.authoring.analysis_defaults``: window,
minimum values, interval, initial delay and inconclusive limit from the telemetry interval;
five measurements), and the history runs at a real migration's pace: the command lays it out
on its own clock, starting a few hours back and ending before now, with one twin tick of both
clusters per telemetry interval while a gate measures, each measurement when it is due,
promotion requested minutes after the analysis passed and the two approvals minutes apart —
without waiting for it (it sets the clock the services and the twin read, only while it
runs). Between gates nothing ticks: the charts show that as a gap in the data, which it is.

Lives in the simulation app because it ticks the twin (rollout must not import simulation).
Idempotent: a plan that already exists is left as it is.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from unittest import mock

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from accounts.models import Tenant, User
from cost.hours import CLOSE_LAG_SECONDS, HOUR, floor_hour
from cost.services import ledger_hours_close
from inventory.models import Cluster, Workload
from rollout.models import Criterion, MigrationPlan, PhaseKind, PlanState
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.authoring import THROUGHPUT_FLOOR, analysis_defaults
from rollout.services.criteria import criterion_save
from rollout.services.plans import plan_create
from rollout.services.transitions import gate_approve, plan_promote, plan_start
from simulation.models import TwinRun
from simulation.services import twin_run_control, twin_tick

TARGET, SOURCE = "unified-demo", "legacy-h100"
# The serving histograms every gate reads (the twin exports them as real engines do), their
# P99 computed from the step's bucket increases like Prometheus' histogram_quantile.
TTFT = "serving_ttft_seconds"
TPOT = "serving_tpot_seconds"
THROUGHPUT = "training_samples_per_second"
STRICT_TPOT_SECONDS = 0.01  # zhiyuan-ai's gate: stricter than decode physics allows
# Where a workload has no target of its own: the chat defaults of the engine's scenario.
DEFAULT_TTFT_SECONDS, DEFAULT_TPOT_SECONDS = 2.0, 0.1
# tenant, pilot (non-core) workload, gray (core) workload, where the plan should end
# The seeded history starts this long before now (raw data, which gates read, lives 6 h).
HISTORY = timedelta(hours=3)
# A person looks at the passed analysis, then two approvers at their own pace.
REQUEST_AFTER = timedelta(minutes=3)
APPROVAL_GAPS = (timedelta(minutes=9), timedelta(minutes=6))
MAX_TICKS_PER_GATE = 120  # a run still measuring after 20 minutes is left as it is


class SeedClock:
    """The command's own wall clock: moved forward explicitly, never past real time."""

    def __init__(self, start: datetime) -> None:
        self.at = start

    def now(self) -> datetime:
        return self.at

    def advance(self, delta: timedelta) -> None:
        self.at += delta
        if self.at > datetime.now(tz=self.at.tzinfo):
            raise CommandError("the seeded history would end in the future; seed fewer plans")


PLANS = (
    ("acme-bank", "train-0000", "chat-llama-3-8b-000", "completed"),
    ("starlight-media", "train-0003", "chat-bloom-176b-003", "awaiting"),
    ("zhiyuan-ai", "train-0001", "chat-llama-2-70b-001", "strict"),
)


class Command(BaseCommand):
    help = "Create three demo migration plans by running the workflow on the twin (idempotent)."

    def handle(self, *args, **options) -> None:
        try:
            self.target = Cluster.objects.get(name=TARGET)
            self.source = Cluster.objects.get(name=SOURCE)
            self.operator = Actor(User.objects.get(username="operator"))
            self.approvers = [
                Actor(User.objects.get(username=name)) for name in ("approver1", "approver2")
            ]
        except (Cluster.DoesNotExist, User.DoesNotExist) as exc:
            raise CommandError("Run seed_demo and seed_twin first.") from exc
        self.runs = list(TwinRun.objects.filter(cluster__in=[self.target, self.source]))
        self.defaults = analysis_defaults()
        # The history's start, fixed once: seeding a full-size demo takes many minutes, and
        # "now − HISTORY" read again at the end would skip the history's first hours.
        started = timezone.now() - HISTORY
        self.clock = SeedClock(started)
        # One engine step per seeded tick: the gates' defaults expect one value per telemetry
        # interval, and the demo's ten steps per tick made seeding ten times the work.
        speeds = {run.pk: run.steps_per_tick for run in self.runs}
        for pk in speeds:
            twin_run_control(run_id=pk, action="speed", steps_per_tick=1)
        try:
            # The services, the audit trail and the twin read this clock while it runs.
            with mock.patch("django.utils.timezone.now", self.clock.now):
                self._seed_all()
        finally:
            for pk, steps in speeds.items():
                twin_run_control(run_id=pk, action="speed", steps_per_tick=steps)
        self._close_seeded_hours(since=started)

    def _close_seeded_hours(self, *, since: datetime) -> None:
        """Close the seeded history's hours into the cost ledger as a running portal would,
        each just after its end. The history is hours old before beat's ledger task first
        runs, and the demo keeps minute detail only two hours: unclosed, its hours could never
        be billed and the cost page's default window would be refused."""
        hour_end = floor_hour(since) + timedelta(seconds=HOUR)
        now = timezone.now()
        while hour_end + timedelta(seconds=CLOSE_LAG_SECONDS) < now:
            ledger_hours_close(now=hour_end + timedelta(seconds=CLOSE_LAG_SECONDS + 1))
            hour_end += timedelta(seconds=HOUR)

    def _seed_all(self) -> None:
        for slug, pilot, gray, outcome in PLANS:
            name = f"{slug}: {SOURCE} → {TARGET}"
            tenant = Tenant.objects.filter(slug=slug).first()
            if tenant is None:
                self.stdout.write(f"Tenant {slug!r} not found; skipped.")
                continue
            if MigrationPlan.objects.filter(tenant=tenant, name=name).exists():
                self.stdout.write(f"Plan {name!r} already exists; left as it is.")
                continue
            plan = self._plan(tenant, name, pilot, gray, outcome)
            self._drive(plan, outcome)
            plan.refresh_from_db()
            self.stdout.write(
                f"Plan {name!r}: {plan.state}, phase {plan.current_phase or '-'}"
                + (f" {plan.current_step_percent}%" if plan.current_step_percent else "")
            )

    def _plan(
        self, tenant: Tenant, name: str, pilot: str, gray: str, outcome: str
    ) -> MigrationPlan:
        source = {w.name: w for w in Workload.objects.filter(cluster=self.source, tenant=tenant)}
        if pilot not in source or gray not in source:
            raise CommandError(f"{tenant.slug}: the twin has no {pilot!r} / {gray!r} to move")
        plan = plan_create(
            tenant=tenant,
            name=name,
            source_cluster=self.source,
            target_cluster=self.target,
            workloads={PhaseKind.PILOT: [source[pilot]], PhaseKind.GRAY: [source[gray]]},
            actor=self.operator,
        )
        service = source[gray]
        ttft_limit = service.slo_ttft_ms / 1000 if service.slo_ttft_ms else DEFAULT_TTFT_SECONDS
        tpot_limit = service.slo_tpot_ms / 1000 if service.slo_tpot_ms else DEFAULT_TPOT_SECONDS
        if outcome == "strict":
            tpot_limit = STRICT_TPOT_SECONDS
        criteria = (
            # Moving non-core training must not hurt the unified cluster's inference SLOs.
            (PhaseKind.PILOT, "cluster-slo", "cluster_inference_slo_attainment_ratio",
             "cluster", "cluster", "mean", "ge", 0.95, False),
            # The authoring default for the moved training job: its throughput on the target
            # at least 0.9 × what the twin's model expects there from its pre-move figure on
            # the source's H100s (never a raw cross-hardware ratio).
            (PhaseKind.PILOT, "pilot-throughput", THROUGHPUT, "workload", pilot, "mean", "ge",
             THROUGHPUT_FLOOR, "relative"),
            (PhaseKind.GRAY, "ttft-p99", TTFT, "workload", gray, "p99", "le", ttft_limit, False),
            (PhaseKind.GRAY, "tpot-p99", TPOT, "workload", gray, "p99", "le", tpot_limit, False),
            (PhaseKind.GRAY, "slo-attainment", "inference_slo_attainment_ratio", "workload",
             gray, "mean", "ge", 0.99, True),
            (PhaseKind.FULL, "ttft-p99", TTFT, "workload", gray, "p99", "le", ttft_limit, False),
            (PhaseKind.FULL, "tpot-p99", TPOT, "workload", gray, "p99", "le", tpot_limit, False),
        )  # fmt: skip
        if outcome == "strict":
            # zhiyuan-ai's story is the gray gate's impossible TPOT; its pilot job is still
            # queued on the target twin, which the throughput criterion would (rightly) call
            # idle and pause on before the gray step ever ran.
            criteria = tuple(c for c in criteria if c[1] != "pilot-throughput")
        for kind, cname, metric, entity_kind, key, agg, comparator, threshold, how in criteria:
            criterion_save(
                criterion=Criterion(
                    phase=plan.phases.get(kind=kind),
                    name=cname,
                    metric=metric,
                    entity_kind=entity_kind,
                    entity_key=key,
                    aggregation=agg,
                    comparator=comparator,
                    threshold=threshold,
                    # The authoring defaults, as a plan made on the page gets them.
                    window_seconds=self.defaults.window_seconds,
                    count=self.defaults.count,
                    interval_seconds=self.defaults.interval_seconds,
                    initial_delay_seconds=self.defaults.initial_delay_seconds,
                    min_samples=self.defaults.min_samples,
                    inconclusive_limit=self.defaults.inconclusive_limit,
                    dry_run=how is True,
                    compare_to_baseline=how == "relative",
                ),
                actor=self.operator,
            )
        return plan

    def _tick_twin(self, *, clusters: tuple[Cluster, ...]) -> None:
        """One telemetry interval later, advance the clusters' twin runs once at that time."""
        self.clock.advance(timedelta(seconds=self.defaults.telemetry_interval_seconds))
        for run in self.runs:
            if run.cluster_id in {c.pk for c in clusters}:
                run.refresh_from_db()
                twin_tick(
                    run_id=run.pk, expected_seq=run.tick_seq, tick_time=self.clock.at.timestamp()
                )

    def _analyse(self, plan: MigrationPlan) -> str:
        """Tick the twin and take each measurement when due until the gate's run ends."""
        plan.refresh_from_db()
        run = plan.current_gate.runs.get(status="running")
        for _tick in range(MAX_TICKS_PER_GATE):
            # Every seeded criterion reads the target (the pilot's relative one compares with
            # the source's pre-move figure, already written), so only the target ticks while a
            # gate measures: a tick of the fleet is the cost.
            self._tick_twin(clusters=(self.target,))
            due = run.metrics.filter(status="running", next_at__lte=self.clock.at).exists()
            if due:
                phase = analysis_run_step(run_id=run.pk, now=self.clock.at)
                if phase != "running":
                    return phase
        return "running"

    def _drive(self, plan: MigrationPlan, outcome: str) -> None:
        # Both clusters run at the moment the plan starts (the source's figures before it).
        self._tick_twin(clusters=(self.target, self.source))
        plan_start(plan_id=plan.pk, actor=self.operator)
        while True:
            plan.refresh_from_db()
            if plan.state != PlanState.RUNNING:
                return
            if self._analyse(plan) != "successful":
                return  # failed → rolled back, inconclusive → paused: as the workflow decides
            plan.refresh_from_db()
            at_5 = plan.current_phase == PhaseKind.GRAY and plan.current_step_percent == 5
            self.clock.advance(REQUEST_AFTER)
            plan_promote(plan_id=plan.pk, actor=self.operator, reason="analysis passed")
            if outcome == "awaiting" and at_5:
                return
            revision = plan.current_gate.revision
            for approver, gap in zip(self.approvers, APPROVAL_GAPS, strict=True):
                self.clock.advance(gap)
                gate_approve(
                    plan_id=plan.pk,
                    actor=approver,
                    revision=revision,
                    comment="figures within the gate",
                )
