"""python manage.py seed_migrations: three demo plans produced by running the workflow.

Needs ``seed_demo`` (the operator and approver logins) and ``seed_twin`` (the clusters
``unified-demo`` and ``legacy-h100`` with their workloads) first — ``make demo`` runs them in
that order. Each plan is driven through the same services the UI and API call: start,
analysis steps, promotion requests, approvals by two approvers. A gate measures telemetry in
the store: before each measurement the command writes a few seconds of the gate's metric for
the workload through the ingestion store (``samples_write``, the path exporters use), next to
whatever the ticking twin writes. The result:

- ``acme-bank`` — completed (pilot → gray 5/25/50/100% → full);
- ``starlight-media`` — in gray at 5%, its analysis passed, awaiting approval;
- ``zhiyuan-ai`` — rolled back: the 25% step's latency broke the gate, traffic went back to 5%.

Idempotent: a plan that already exists is left as it is.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from monitoring.models import Cluster, Entity, MetricDefinition, Tenant, User, Workload
from monitoring.telemetry.store import samples_write
from rollout.models import Criterion, MigrationPlan, PhaseKind, PlanState
from rollout.services.analysis import analysis_run_step
from rollout.services.audit import Actor
from rollout.services.plans import criterion_save, plan_create
from rollout.services.transitions import gate_approve, plan_promote, plan_start

TARGET, SOURCE = "unified-demo", "legacy-h100"
LATENCY = "inference_latency_p99_seconds"
THROUGHPUT = "training_samples_per_second"
# tenant, pilot (non-core) workload, gray (core) workload, where the plan should end
PLANS = (
    ("acme-bank", "train-0000", "chat-llama-3-8b-000", "completed"),
    ("starlight-media", "train-0003", "chat-bloom-176b-003", "awaiting"),
    ("zhiyuan-ai", "train-0001", "chat-llama-2-70b-001", "rolled_back"),
)


class Command(BaseCommand):
    help = "Create three demo migration plans by running the workflow (idempotent)."

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
        for slug, pilot, gray, outcome in PLANS:
            name = f"{slug}: {SOURCE} → {TARGET}"
            tenant = Tenant.objects.filter(slug=slug).first()
            if tenant is None:
                self.stdout.write(f"Tenant {slug!r} not found; skipped.")
                continue
            if MigrationPlan.objects.filter(tenant=tenant, name=name).exists():
                self.stdout.write(f"Plan {name!r} already exists; left as it is.")
                continue
            plan = self._plan(tenant, name, pilot, gray)
            self._drive(plan, pilot, gray, outcome)
            plan.refresh_from_db()
            self.stdout.write(
                f"Plan {name!r}: {plan.state}, phase {plan.current_phase or '-'}"
                + (f" {plan.current_step_percent}%" if plan.current_step_percent else "")
            )

    def _plan(self, tenant: Tenant, name: str, pilot: str, gray: str) -> MigrationPlan:
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
        criteria = (
            (PhaseKind.PILOT, "throughput", THROUGHPUT, pilot, "min", "ge", 0.0, False),
            (PhaseKind.GRAY, "p99-latency", LATENCY, gray, "p99", "le", 3.0, False),
            (PhaseKind.GRAY, "slo-attainment", "inference_slo_attainment_ratio", gray, "mean",
             "ge", 0.99, True),
            (PhaseKind.FULL, "p99-latency", LATENCY, gray, "p99", "le", 3.0, False),
        )  # fmt: skip
        for kind, cname, metric, key, agg, comparator, threshold, dry_run in criteria:
            criterion = Criterion(
                phase=plan.phases.get(kind=kind),
                name=cname,
                metric=metric,
                entity_kind="workload",
                entity_key=key,
                aggregation=agg,
                comparator=comparator,
                threshold=threshold,
                window_seconds=60,
                count=1,
                interval_seconds=30,
                dry_run=dry_run,
            )
            criterion_save(criterion=criterion, actor=self.operator)
        return plan

    def _measure(self, plan: MigrationPlan, values: dict[tuple[str, str], float]) -> str:
        """Write a few seconds of each (metric, workload) value, then one analysis step."""
        now = time.time()
        with transaction.atomic():
            rows = []
            for (metric, key), value in values.items():
                definition = MetricDefinition.objects.get(name=metric)
                entity = Entity.objects.get(cluster=self.target, kind="workload", key=key)
                rows += [(definition.pk, entity.pk, now - s, value) for s in (3, 2, 1)]
            samples_write(rows)
        plan.refresh_from_db()
        run = plan.current_gate.runs.get(status="running")
        return analysis_run_step(run_id=run.pk, now=timezone.now())

    def _approve(self, plan: MigrationPlan) -> None:
        plan_promote(plan_id=plan.pk, actor=self.operator, reason="analysis passed")
        for approver in self.approvers:
            gate_approve(plan_id=plan.pk, actor=approver, comment="figures within SLO")
        plan.refresh_from_db()

    def _drive(self, plan: MigrationPlan, pilot: str, gray: str, outcome: str) -> None:
        good = {
            (LATENCY, gray): 0.8,
            (THROUGHPUT, pilot): 1200.0,
            ("inference_slo_attainment_ratio", gray): 0.995,
        }
        plan_start(plan_id=plan.pk, actor=self.operator)
        while True:
            plan.refresh_from_db()
            if plan.state != PlanState.RUNNING:
                return
            at_25 = plan.current_phase == PhaseKind.GRAY and plan.current_step_percent == 25
            if outcome == "rolled_back" and at_25:
                # The 25% step overloads the service: p99 latency 8 s breaks the 3 s gate.
                self._measure(plan, {**good, (LATENCY, gray): 8.0})
                return
            if self._measure(plan, good) != "successful":
                return
            at_5 = plan.current_phase == PhaseKind.GRAY and plan.current_step_percent == 5
            if outcome == "awaiting" and at_5:
                plan_promote(plan_id=plan.pk, actor=self.operator, reason="analysis passed")
                return
            self._approve(plan)
