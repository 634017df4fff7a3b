"""Authoring a plan without a superuser: workloads, steps, approvals and gate criteria from
templates, in one transaction (the page and ``POST /api/v1/plans/`` both call this).

Default criteria per phase, for the workloads that phase moves (the full phase checks all):

- inference: ``p99(serving_ttft_seconds) ≤`` the workload's TTFT target and
  ``p99(serving_tpot_seconds) ≤`` its TPOT target (``slo_ttft_ms`` / ``slo_tpot_ms``;
  a workload without a target gets none) — the P99 of the step's own requests, from the
  serving histograms' bucket increases (a real engine's endpoints bound to the workload, or
  the twin's) — and ``mean(serving_error_ratio) ≤ ERROR_RATIO_MAX`` (failed ÷ finished
  requests over the window);
- inference, gray steps: beside the SLO ceilings, canary vs baseline (Kayenta):
  ``p99(serving_ttft_seconds)`` and ``p99(serving_tpot_seconds) ≤ CANARY_TOLERANCE ×`` the
  baseline's — the source's remaining share of the same traffic over the **same** window
  (``baseline_window = same_window``), scaled to the target's accelerator by the twin's model.
  Only gray has a live baseline (the pilot and full move everything);
- training: ``mean(training_samples_per_second) ≥ THROUGHPUT_FLOOR ×`` what the source's
  pre-move figure should give on the target's accelerator (the twin's model of both;
  ``rollout.analysis.scaling``) — never a raw cross-hardware ratio.

Each criterion takes the plan's analysis ``interval_seconds`` and ``count``; the caller may
edit, drop or add criteria before the plan is created (``criteria=``), and a phase left
without any is refused when the plan starts. Criteria name their workload by id: the
moved workload's counterpart on the target cluster (``rollout.models.binding``).

**Defaults that can pass** (:func:`analysis_defaults`), derived from the telemetry interval
``T`` (``TELEMETRY_INTERVAL_SECONDS``): at least ``MIN_VALUES`` values per measurement; the
first measurement waits ``(MIN_VALUES + 1) × T`` after the step's traffic took effect (one
spare interval: a tick stamped across the step's start is cut, the newest may not be
committed yet), so a healthy step has enough in-step values at its first measurement; the
window is twice that (later measurements see at least twice the minimum); measurements come
every ``2 × T``; one inconclusive measurement (a late tick) is tolerated, a second pauses.
With the demo's 10 s: 3 values, 40 s delay, 80 s window, every 20 s.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import date

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.models import Tenant
from inventory.models import Cluster, Workload
from rollout.models import PHASE_ORDER, Criterion, MigrationPlan, PhaseKind, PlanWorkload
from rollout.models.gates import MAX_WINDOW_SECONDS
from rollout.services.audit import Actor
from rollout.services.criteria import criterion_save, phase_manual_gate_set
from rollout.services.plans import phases_without_gate, plan_create

CANARY_TOLERANCE = 1.2  # the canary's P99 at most 20 % above the baseline's (same window)
ERROR_RATIO_MAX = 0.01  # at most 1 % of the step's requests failed (aborted, timed out)
THROUGHPUT_FLOOR = 0.9
DEFAULT_COUNT = 5
MIN_VALUES = 3


@dataclass(frozen=True)
class AnalysisDefaults:
    """A criterion's analysis settings derived from the telemetry interval (module doc)."""

    telemetry_interval_seconds: int
    min_samples: int
    initial_delay_seconds: int
    window_seconds: int
    interval_seconds: int
    inconclusive_limit: int
    count: int = DEFAULT_COUNT


def analysis_defaults(telemetry_interval_seconds: int | None = None) -> AnalysisDefaults:
    """Settings under which the first measurement of a healthy step can pass."""
    interval = max(1, telemetry_interval_seconds or settings.TELEMETRY_INTERVAL_SECONDS)
    delay = (MIN_VALUES + 1) * interval
    return AnalysisDefaults(
        telemetry_interval_seconds=interval,
        min_samples=MIN_VALUES,
        initial_delay_seconds=delay,
        window_seconds=min(max(2 * delay, 10), MAX_WINDOW_SECONDS),
        interval_seconds=max(2 * interval, 5),
        inconclusive_limit=1,
    )


@dataclass
class CriterionDraft:
    """One criterion as the author sees and edits it (the fields of ``Criterion``)."""

    phase: str
    name: str
    metric: str
    entity_key: str
    aggregation: str
    comparator: str
    threshold: float
    window_seconds: int
    interval_seconds: int
    initial_delay_seconds: int
    min_samples: int
    inconclusive_limit: int
    workload: object = None  # the Workload on the target cluster (its identity)
    compare_to_baseline: bool = False
    baseline_window: str = "pre_move"
    count: int = DEFAULT_COUNT
    entity_kind: str = "workload"

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in text.lower())[:60]


def criteria_defaults(
    *,
    workloads: dict[str, list[Workload]],
    interval_seconds: int | None = None,
    count: int = DEFAULT_COUNT,
    targets: dict[int, Workload] | None = None,
) -> list[CriterionDraft]:
    """The template criteria for each phase's workloads (the full phase: every workload).

    ``targets`` maps a moved workload's id to its counterpart on the target cluster; the
    criteria measure that identity (a workload without one gets criteria by name, which
    authoring then refuses with the reason).
    """
    defaults = analysis_defaults()
    interval_seconds = interval_seconds or defaults.interval_seconds
    everyone = [w for kind in PHASE_ORDER for w in workloads.get(kind, [])]
    window = min(max(interval_seconds, defaults.window_seconds), MAX_WINDOW_SECONDS)
    drafts: list[CriterionDraft] = []
    for phase in PHASE_ORDER:
        members = everyone if phase == PhaseKind.FULL else workloads.get(phase, [])
        for w in members:
            common = {
                "phase": phase,
                "entity_key": w.name,
                "workload": (targets or {}).get(w.pk),
                "window_seconds": window,
                "count": count,
                "interval_seconds": interval_seconds,
                "initial_delay_seconds": defaults.initial_delay_seconds,
                "min_samples": defaults.min_samples,
                "inconclusive_limit": defaults.inconclusive_limit,
            }
            slug = _slug(w.name)
            if w.kind == Workload.Kind.TRAINING:
                drafts.append(
                    CriterionDraft(
                        name=f"{slug}-throughput"[:80],
                        metric="training_samples_per_second",
                        aggregation="mean",
                        comparator="ge",
                        threshold=THROUGHPUT_FLOOR,
                        compare_to_baseline=True,
                        **common,
                    )
                )
                continue
            for field, metric, short in (
                ("slo_ttft_ms", "serving_ttft_seconds", "ttft"),
                ("slo_tpot_ms", "serving_tpot_seconds", "tpot"),
            ):
                target = getattr(w, field)
                if target:
                    drafts.append(
                        CriterionDraft(
                            name=f"{slug}-{short}-p99"[:80],
                            metric=metric,
                            aggregation="p99",
                            comparator="le",
                            threshold=target / 1000.0,
                            **common,
                        )
                    )
            if phase == PhaseKind.GRAY:
                for metric, short in (
                    ("serving_ttft_seconds", "ttft"),
                    ("serving_tpot_seconds", "tpot"),
                ):
                    drafts.append(
                        CriterionDraft(
                            name=f"{slug}-{short}-p99-vs-baseline"[:80],
                            metric=metric,
                            aggregation="p99",
                            comparator="le",
                            threshold=CANARY_TOLERANCE,
                            compare_to_baseline=True,
                            baseline_window="same_window",
                            **common,
                        )
                    )
            drafts.append(
                CriterionDraft(
                    name=f"{slug}-errors"[:80],
                    metric="serving_error_ratio",
                    aggregation="mean",
                    comparator="le",
                    threshold=ERROR_RATIO_MAX,
                    **common,
                )
            )
    return drafts


@transaction.atomic
def plan_author(
    *,
    tenant: Tenant,
    name: str,
    source_cluster: Cluster,
    target_cluster: Cluster,
    pilot: list[Workload],
    gray: list[Workload],
    actor: Actor,
    gray_steps: list[int] | None = None,
    required_approvals: int = 2,
    interval_seconds: int | None = None,
    count: int = DEFAULT_COUNT,
    criteria: list[dict] | None = None,
    start: date | None = None,
) -> MigrationPlan:
    """A draft plan with its workloads and gate criteria (the templates unless ``criteria``).

    Raises ``ValidationError`` (nothing written) when a workload, a step, a cluster or a
    criterion is invalid, and ``NotPermitted`` without the operate permission.
    """
    phases = {PhaseKind.PILOT: list(pilot), PhaseKind.GRAY: list(gray)}
    plan = plan_create(
        tenant=tenant,
        name=name,
        source_cluster=source_cluster,
        target_cluster=target_cluster,
        workloads={k: v for k, v in phases.items() if v},
        actor=actor,
        gray_steps=gray_steps,
        required_approvals=required_approvals,
        start=start,
    )
    if criteria is None:
        targets = {
            item.workload_id: item.target_workload
            for item in PlanWorkload.objects.filter(plan=plan).select_related("target_workload")
            if item.target_workload is not None
        }
        criteria = [
            d.as_dict()
            for d in criteria_defaults(
                workloads=phases, interval_seconds=interval_seconds, count=count, targets=targets
            )
        ]
    by_kind = {p.kind: p for p in plan.phases.all()}
    derived = analysis_defaults()
    unset = {
        "window_seconds": derived.window_seconds,
        "interval_seconds": interval_seconds or derived.interval_seconds,
        "initial_delay_seconds": derived.initial_delay_seconds,
        "min_samples": derived.min_samples,
        "inconclusive_limit": derived.inconclusive_limit,
        "count": count,
    }
    for index, spec in enumerate(criteria):
        # What the author left out follows the telemetry interval, not the model's defaults.
        spec = {**unset, **spec}
        kind = spec.pop("phase", None)
        if kind not in by_kind:
            raise ValidationError({"criteria": f"criterion {index}: unknown phase {kind!r}"})
        try:
            criterion_save(criterion=Criterion(phase=by_kind[kind], **spec), actor=actor)
        except ValidationError as exc:
            messages = [f"criterion {index}: {m}" for m in exc.messages]
            raise ValidationError({"criteria": messages}) from exc
        except TypeError as exc:
            raise ValidationError({"criteria": f"criterion {index}: {exc}"}) from exc
    return plan


def plan_manual_empty_phases(*, plan: MigrationPlan, actor: Actor) -> None:
    """The author consented (in the form) to manual gates for phases left without workloads:
    each becomes an explicit, audited manual gate."""
    for kind in phases_without_gate(plan):
        phase_manual_gate_set(
            phase=plan.phases.get(kind=kind),
            manual=True,
            actor=actor,
            reason="no workloads in this phase: manual gate chosen in the plan form",
        )
