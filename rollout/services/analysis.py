"""Analysis runs: start one for a gate, take the due measurements, act on the outcome.

A beat task calls :func:`analysis_run_step` for every run with a due metric. The step locks
the plan and then the run, so two workers stepping the same run serialize and the second
finds nothing due: each measurement is taken once.

**Each gate measures its own step** (Argo Rollouts' ``initialDelay``): a run records when the
step's traffic took effect (``traffic_at``, moved to the commit of the transition that set the
shares, because a twin tick reads the shares when it starts and stamps its data no later than
that), takes its first measurement an initial delay later (default
``ROLLOUT_INITIAL_DELAY_SECONDS``: two telemetry intervals, at least one twin tick) and counts
only values stamped after ``traffic_at``; a window reaching further back is cut there. Fewer
in-step values than the criterion's ``min_samples`` make the measurement **Inconclusive**, never
Successful.

**No data in the window.** A criterion whose entity exists but has no value of the metric
in ``[now - window, now]`` (or, against the baseline, whose source cluster has none) is
measured **Inconclusive**: missing telemetry says nothing about the migration, so it must
neither pass a gate nor roll a customer back by itself — past its ``inconclusive_limit`` it
pauses the plan for a human. An unknown metric or entity is an
**Error** (the measurement could not be taken): retried after ``error_retry_seconds``,
without using up ``count``. A cluster whose PromQL data source is down or too slow to answer
is measured **Inconclusive** too ("data source unavailable"), never a pass.

**Baselines and idle workloads** (:mod:`rollout.services.baselines`): a relative criterion
compares with the source's pre-move window, captured when the run starts and stored on the
metric result; a workload with no traffic or no throughput in the window, and a baseline that
is missing, idle or not above 0, are Inconclusive — ``0 ≥ 0.9 × 0`` never holds.

**Only designated evidence counts.** A measurement aggregates the values of the sources its
criterion trusts (``trusted_sources``; by default the twin and the target cluster's exporters and
data source — never a person's or a tenant's token) and records how many values each source
gave, counted and ignored (``Measurement.evidence``, also in the reason approvers read). The
idle check and the pre-move baseline read through the same trust. Pushes from other sources
during the analysis are stored (dashboards show them) but ignored here, and the first time a
source is ignored in a run an ``evidence_ignored`` audit row names it. A window holding only
untrusted values has no data: Inconclusive.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.forms.models import model_to_dict
from django.utils import timezone

from rollout.analysis import semantics as S
from rollout.analysis.evidence import evidence_ignored_audit
from rollout.labels import reason_data
from rollout.models import (
    AnalysisRun,
    Gate,
    GateState,
    Measurement,
    MetricResult,
    MigrationPlan,
    Outcome,
    PlanState,
)
from rollout.services.audit import SYSTEM, audit_record
from rollout.services.baselines import baseline_capture, binding_spec, unbound
from rollout.services.measuring import evaluate, trusted_reader
from rollout.services.plans import plan_lock, plan_move, traffic_rollback
from rollout.services.router_readings import router_evidence
from rollout.services.traffic import restore_verified
from telemetry.read import DataSourceUnavailable, MeasurementError

SPEC_FIELDS = (
    "metric",
    "entity_kind",
    "entity_key",
    "aggregation",
    "comparator",
    "threshold",
    "window_seconds",
    "compare_to_baseline",
    "baseline_window",
    "count",
    "interval_seconds",
    "initial_delay_seconds",
    "min_samples",
    "failure_limit",
    "inconclusive_limit",
    "consecutive_error_limit",
    "error_retry_seconds",
    "trusted_sources",
)


def initial_delay(criterion_delay: int | None) -> int:
    """A criterion's initial delay, or the default when it names none."""
    if criterion_delay is None:
        return settings.ROLLOUT_INITIAL_DELAY_SECONDS
    return criterion_delay


def analysis_start(
    *,
    gate: Gate,
    now: datetime,
    traffic_at: datetime | None = None,
    traffic_pending: bool = False,
) -> AnalysisRun:
    """A run for the gate's current revision, one metric result per criterion of its phase.

    ``traffic_at`` is when the step's traffic took effect: a real router's read-back
    confirmation (``rollout.services.traffic``); by default ``now``, the twin's shares
    having just been set, and then moved to the moment the transaction commits. A run
    restarted for edited criteria passes the old run's (the traffic did not change).
    ``traffic_pending``: a router will confirm later (a signed callback); no measurement is
    due until :func:`analysis_traffic_confirmed` starts the clock.
    """
    moved_on_commit = traffic_at is None and not traffic_pending
    traffic_at = None if traffic_pending else (traffic_at or now)
    run = AnalysisRun.objects.create(
        gate=gate, gate_revision=gate.revision, started_at=now, traffic_at=traffic_at
    )
    criteria = list(gate.phase.criteria.all())
    for criterion in criteria:
        spec = model_to_dict(criterion, fields=SPEC_FIELDS)
        spec["initial_delay_seconds"] = initial_delay(criterion.initial_delay_seconds)
        spec.update(binding_spec(criterion))
        metric = MetricResult.objects.create(
            run=run,
            criterion=criterion,
            name=criterion.name,
            spec=spec,
            dry_run=criterion.dry_run,
            next_at=None
            if traffic_at is None
            else max(now, traffic_at + timedelta(seconds=spec["initial_delay_seconds"])),
        )
        _baseline_at_start(metric, gate.plan, now)
    if criteria and moved_on_commit:
        transaction.on_commit(lambda: _traffic_committed(run.pk))
    if not any(not c.dry_run for c in criteria):
        if gate.phase.manual_gate:
            # Chosen explicitly (and audited) by an operator: approvers alone decide.
            _say(run, "manual gate: no criteria, approvers decide", reason_data("manual_gate"))
            _finish(run, S.SUCCESSFUL, now)
            _gate_passed(gate, run)
        else:
            # Never "passes at once": nothing measured is nothing proven.
            _say(
                run,
                "no decisive criteria and no manual gate: nothing can pass",
                reason_data("nothing_can_pass"),
            )
            _finish(run, S.INCONCLUSIVE, now)
            _act_on(gate.plan, gate, run, S.INCONCLUSIVE)
    return run


def _baseline_at_start(metric: MetricResult, plan: MigrationPlan, now: datetime) -> None:
    """Capture a relative criterion's pre-move baseline now; a failed read is retried by the
    first measurement (the window is in the past, so the figure does not change)."""
    if not metric.spec.get("compare_to_baseline") or unbound(metric.spec):
        return
    try:
        with transaction.atomic():
            baseline_capture(trusted_reader(metric.spec, plan), metric, plan, now=now)
    except (DataSourceUnavailable, MeasurementError):
        return


def _traffic_committed(run_id: int) -> None:
    """The shares are visible to the twin from now on: the step (and its delay) start here."""
    committed = timezone.now()
    with transaction.atomic():
        run = AnalysisRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.traffic_at is None or run.traffic_at >= committed:
            return
        run.traffic_at = committed
        run.save(update_fields=["traffic_at"])
        for metric in run.metrics.filter(status=Outcome.RUNNING, taken=0, errors=0):
            delay = metric.spec.get("initial_delay_seconds") or 0
            metric.next_at = committed + timedelta(seconds=delay)
            metric.save(update_fields=["next_at"])


def analysis_traffic_confirmed(*, gate: Gate, at: datetime) -> None:
    """A router confirmed the step's share (a callback): its analysis clock starts at ``at``."""
    for run in gate.runs.filter(status=Outcome.RUNNING, traffic_at__isnull=True):
        run.traffic_at = at
        run.save(update_fields=["traffic_at"])
        for metric in run.metrics.filter(status=Outcome.RUNNING, taken=0, errors=0):
            delay = metric.spec.get("initial_delay_seconds") or 0
            metric.next_at = at + timedelta(seconds=delay)
            metric.save(update_fields=["next_at"])


def analysis_terminate(*, gate: Gate, now: datetime) -> None:
    """Stop the gate's running analysis (abort, skip, force-promote, retry)."""
    for run in gate.runs.filter(status=Outcome.RUNNING):
        if not run.message:
            _say(run, "terminated", reason_data("terminated"))
        _finish(run, Outcome.TERMINATED, now)


def analysis_due_run_ids(*, now: datetime) -> list[int]:
    return list(
        AnalysisRun.objects.filter(
            status=Outcome.RUNNING,
            gate__plan__state=PlanState.RUNNING,
            metrics__status=Outcome.RUNNING,
            metrics__next_at__lte=now,
        )
        .values_list("id", flat=True)
        .distinct()
        .order_by("id")
    )


@transaction.atomic
def analysis_run_step(*, run_id: int, now: datetime | None = None) -> str:
    """Take one measurement for each metric of the run that is due; return the run's phase."""
    now = now or timezone.now()
    plan_id = AnalysisRun.objects.values_list("gate__plan_id", flat=True).get(pk=run_id)
    plan = plan_lock(plan_id)  # plan before run: the order every transition locks in
    run = AnalysisRun.objects.select_for_update().select_related("gate__phase").get(pk=run_id)
    if (
        run.status != Outcome.RUNNING
        or plan.state != PlanState.RUNNING
        or plan.current_gate_id != run.gate_id
    ):
        return run.status
    gate = run.gate
    if gate.revision != run.gate_revision:
        # The criteria changed under the run: measure what approvers will now approve.
        _say(run, "superseded: the gate's criteria changed", reason_data("superseded"))
        _finish(run, Outcome.TERMINATED, now)
        return analysis_start(gate=gate, now=now, traffic_at=run.traffic_at).status
    metrics = list(run.metrics.all())
    for metric in metrics:
        if metric.status == Outcome.RUNNING and metric.next_at and metric.next_at <= now:
            _measure(metric, plan, now, since=run.traffic_at)
    phase = S.run_phase([(m.status, m.dry_run) for m in metrics])
    if phase == S.RUNNING:
        return phase
    for metric in metrics:
        if metric.status == Outcome.RUNNING:
            metric.status = Outcome.TERMINATED
            metric.stopped_early = True
            metric.next_at = None
            metric.save(update_fields=["status", "stopped_early", "next_at"])
    worst = [m for m in metrics if m.status == phase and not m.dry_run]
    criterion = worst[0].name if worst and phase != S.SUCCESSFUL else ""
    _say(
        run,
        f"{phase}: {criterion}" if criterion else phase,
        reason_data("phase", phase=phase, criterion=criterion),
    )
    _finish(run, phase, now)
    _act_on(plan, gate, run, phase)
    return phase


def _say(run: AnalysisRun, message: str, data: dict) -> None:
    """Set the run's message: English text for the API and logs, the code for pages."""
    run.message = message
    run.message_data = data


def _finish(run: AnalysisRun, status: str, now: datetime) -> None:
    run.status = status
    run.finished_at = now
    run.save(update_fields=["status", "finished_at", "message", "message_data"])
    if status != S.RUNNING:
        run.metrics.filter(status=Outcome.RUNNING).update(
            status=Outcome.TERMINATED, stopped_early=True, next_at=None
        )


def _gate_passed(gate: Gate, run: AnalysisRun) -> None:
    before = gate.state
    gate.state = GateState.PASSED
    gate.save(update_fields=["state"])
    audit_record(
        actor=SYSTEM,
        action="analysis_successful",
        plan=gate.plan,
        obj=gate,
        from_state=before,
        to_state=gate.state,
        reason=run.message,
        reason_data=run.message_data,
    )


def _act_on(plan: MigrationPlan, gate: Gate, run: AnalysisRun, phase: str) -> None:
    if phase == S.SUCCESSFUL:
        _gate_passed(gate, run)
        return
    if phase == S.INCONCLUSIVE:
        gate.state = GateState.INCONCLUSIVE
        gate.save(update_fields=["state"])
        plan.resume_state = ""
        plan_move(
            plan,
            to=PlanState.PAUSED,
            action="analysis_inconclusive",
            actor=SYSTEM,
            reason=run.message,
            reason_data=run.message_data,
            events=("awaiting_approval",),
            obj=gate,
        )
        return
    # Failed or Error: automatic abort, traffic back to the last stable step, verified.
    gate.state = GateState.FAILED
    gate.save(update_fields=["state"])
    traffic_rollback(plan)
    restore_verified(
        plan,
        to=PlanState.ROLLED_BACK,
        action="rollback",
        actor=SYSTEM,
        reason=run.message,
        reason_data=run.message_data,
        events=("analysis_failed", "aborted"),
        obj=gate,
    )


def _measure(
    metric: MetricResult, plan: MigrationPlan, now: datetime, *, since: datetime | None
) -> None:
    spec = metric.spec
    start = now - timedelta(seconds=spec["window_seconds"])
    if since is not None and start <= since:
        # Only the step's own data: strictly after its traffic took effect.
        start = since + timedelta(microseconds=1)
    value = baseline = threshold = None
    samples = 0
    data: dict | None = None
    evidence: dict = {}
    try:
        with transaction.atomic():  # a failed read must not poison the step's transaction
            outcome, value, baseline, threshold, samples, (reason, data), evidence = evaluate(
                spec, plan, start, now, metric=metric
            )
    except DataSourceUnavailable as exc:
        # The cluster's PromQL server is down or slow: nothing is known about the migration,
        # which is Inconclusive (never a pass), not an Error retried without counting.
        outcome, reason = S.INCONCLUSIVE, str(exc)[:500]
    except MeasurementError as exc:
        outcome, reason = S.ERROR, f"error: {exc}"
        data = reason_data("error", detail=str(exc))
    except Exception as exc:  # noqa: BLE001 - any failure to read is an Error measurement
        outcome, reason = S.ERROR, f"error: {type(exc).__name__}: {exc}"[:500]
        data = reason_data("error", detail=f"{type(exc).__name__}: {exc}"[:400])
    # What the routers did in the window: their own failures, a split off its share.
    outcome, value, reason, data = router_evidence(
        plan, spec, start, now, outcome=outcome, value=value, threshold=threshold,
        reason=reason, data=data,
    )  # fmt: skip
    counters = S.MetricCounters(
        **{k: getattr(metric, k) for k in _COUNTER_FIELDS},
        count=spec["count"],
        failure_limit=spec["failure_limit"],
        inconclusive_limit=spec["inconclusive_limit"],
        consecutive_error_limit=spec["consecutive_error_limit"],
    )
    metric.status = S.metric_record(counters, outcome)
    for key, val in asdict(counters).items():
        if key in _COUNTER_FIELDS:
            setattr(metric, key, val)
    delay = spec["error_retry_seconds"] if outcome == S.ERROR else spec["interval_seconds"]
    metric.next_at = now + timedelta(seconds=delay) if metric.status == S.RUNNING else None
    metric.save()
    measurement = Measurement.objects.create(
        result=metric,
        seq=metric.taken + metric.errors,
        outcome=outcome,
        value=value,
        baseline=baseline,
        threshold=threshold,
        samples=samples,
        window_start=start,
        window_end=now,
        reason=reason[:500],
        reason_data=data,
        evidence=evidence,
        taken_at=now,
    )
    if evidence.get("ignored"):
        evidence_ignored_audit(measurement, plan, evidence["ignored"])


_COUNTER_FIELDS = (
    "taken",
    "successful",
    "failed",
    "inconclusive",
    "errors",
    "consecutive_errors",
)
