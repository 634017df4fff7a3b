"""Who is acting (a user, an integration token or the system) and the audit rows they leave."""

from __future__ import annotations

from django.db import models

# Actor lives in accounts (every app's four-eyes commands share it); re-exported here.
from accounts.services.actor import Actor
from rollout.models import AuditEntry, Gate, MigrationPlan, Phase, PhaseKind

SYSTEM = Actor()


def phase_touched(
    obj: models.Model | None, plan: MigrationPlan | None, phase: Phase | None = None
) -> tuple[str | None, int | None]:
    """``(phase kind, gray step %)`` an audit row touches: the given phase, else the gate's
    (the object's own gate, or the gate it belongs to: an approval, a run, a criterion's
    phase), else the phase object, else where the plan stands; ``(None, None)`` for none."""
    gate = obj if isinstance(obj, Gate) else getattr(obj, "gate", None)
    if phase is None and isinstance(gate, Gate):
        plan = gate.plan
        phase = gate.phase
        if phase.kind == PhaseKind.GRAY and gate.step_index < len(plan.gray_steps):
            return phase.kind, plan.gray_steps[gate.step_index]
        return phase.kind, None
    if phase is None:
        phase = obj if isinstance(obj, Phase) else getattr(obj, "phase", None)
    if isinstance(phase, Phase):
        return phase.kind, None
    if plan is not None and plan.current_phase:
        return plan.current_phase, plan.current_step_percent
    return None, None


def audit_record(
    *,
    actor: Actor,
    action: str,
    plan: MigrationPlan | None,
    obj: models.Model | None = None,
    from_state: str = "",
    to_state: str = "",
    reason: str = "",
    reason_data: dict | None = None,
    phase: Phase | None = None,
) -> AuditEntry:
    """Append one audit row (the only way rows are written).

    The row names the phase it touches (:func:`phase_touched`; ``phase`` names it where
    neither ``obj`` nor the plan can, e.g. a deleted criterion's phase).

    ``reason_data``: the reason as a code and parameters (rollout/labels.py) when the
    workflow wrote it, so pages can show it in the reader's language.
    """
    target = obj if obj is not None else plan
    touched, step = phase_touched(obj, plan, phase)
    return AuditEntry.objects.create(
        actor=actor.user,
        actor_label=actor.label,
        action=action,
        object_type=target._meta.model_name if target is not None else "",
        object_id=target.pk if target is not None else None,
        plan=plan,
        from_state=from_state,
        to_state=to_state,
        reason=reason,
        reason_data=reason_data,
        source_ip=actor.ip,
        phase=touched,
        gray_step_percent=step,
    )
