"""Authoring a plan without a superuser: workloads, steps, approvals and gate criteria from
templates, in one transaction (the page and ``POST /api/v1/plans/`` both call this).

Default criteria per phase, for the workloads that phase moves (the full phase checks all):

- inference: ``p99(inference_ttft_p99_seconds) ≤`` the workload's TTFT target and
  ``p99(inference_tpot_p99_seconds) ≤`` its TPOT target (``slo_ttft_ms`` / ``slo_tpot_ms``;
  a workload without a target gets none), and ``rate(inference_timeouts_total) ≤``
  ``TIMEOUT_RATE_PER_S``;
- training: ``mean(training_samples_per_second) ≥ THROUGHPUT_FLOOR ×`` the same figure on the
  source cluster.

Each criterion takes the plan's analysis ``interval_seconds`` and ``count``; the caller may
edit, drop or add criteria before the plan is created (``criteria=``), and a phase left
without any is refused when the plan starts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date

from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.models import Tenant
from inventory.models import Cluster, Workload
from rollout.models import PHASE_ORDER, Criterion, MigrationPlan, PhaseKind
from rollout.services.audit import Actor
from rollout.services.plans import criterion_save, plan_create

TIMEOUT_RATE_PER_S = 0.05
THROUGHPUT_FLOOR = 0.9
DEFAULT_INTERVAL_SECONDS = 60
DEFAULT_COUNT = 5


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
    window_seconds: int = 300
    compare_to_baseline: bool = False
    count: int = DEFAULT_COUNT
    interval_seconds: int = DEFAULT_INTERVAL_SECONDS
    min_samples: int = 3
    entity_kind: str = "workload"

    def as_dict(self) -> dict:
        return asdict(self)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in text.lower())[:60]


def criteria_defaults(
    *,
    workloads: dict[str, list[Workload]],
    interval_seconds: int = DEFAULT_INTERVAL_SECONDS,
    count: int = DEFAULT_COUNT,
) -> list[CriterionDraft]:
    """The template criteria for each phase's workloads (the full phase: every workload)."""
    everyone = [w for kind in PHASE_ORDER for w in workloads.get(kind, [])]
    window = max(interval_seconds, 60)
    drafts: list[CriterionDraft] = []
    for phase in PHASE_ORDER:
        members = everyone if phase == PhaseKind.FULL else workloads.get(phase, [])
        for w in members:
            common = {
                "phase": phase,
                "entity_key": w.name,
                "window_seconds": window,
                "count": count,
                "interval_seconds": interval_seconds,
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
                ("slo_ttft_ms", "inference_ttft_p99_seconds", "ttft"),
                ("slo_tpot_ms", "inference_tpot_p99_seconds", "tpot"),
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
            drafts.append(
                CriterionDraft(
                    name=f"{slug}-timeouts"[:80],
                    metric="inference_timeouts_total",
                    aggregation="rate",
                    comparator="le",
                    threshold=TIMEOUT_RATE_PER_S,
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
    interval_seconds: int = DEFAULT_INTERVAL_SECONDS,
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
        criteria = [
            d.as_dict()
            for d in criteria_defaults(
                workloads=phases, interval_seconds=interval_seconds, count=count
            )
        ]
    by_kind = {p.kind: p for p in plan.phases.all()}
    for index, spec in enumerate(criteria):
        spec = dict(spec)
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
