"""The one command path: pages, the API and the admin all dispatch plan commands here.

Every caller passes what the person saw — the plan ``expected_version`` and, for decisions on
a gate (approve, reject, force-promote), the gate ``revision`` — so the same click means the
same thing wherever it is made, and a change in between is a 409 rather than a decision on
something the person never saw.
"""

from __future__ import annotations

from rollout.models import MigrationPlan
from rollout.services import transitions as t
from rollout.services.audit import Actor
from rollout.services.overrides import plan_override

# Commands that decide on a gate and therefore must name its revision.
GATE_DECISIONS = ("approve", "reject", "force-promote", "override")

COMMAND_NAMES = (
    "start",
    "promote",
    "approve",
    "reject",
    "pause",
    "resume",
    "abort",
    "retry",
    "force-promote",
    "override",
    "skip",
    "verify-rollback",
)


def plan_command(
    *,
    command: str,
    plan_id: int,
    actor: Actor,
    reason: str = "",
    comment: str = "",
    revision: int | None = None,
    expected_version: int | None = None,
) -> MigrationPlan:
    """Run ``command`` on the plan; raises the services' errors (403/409 for callers)."""
    text = (reason or comment or "").strip()
    common = {"plan_id": plan_id, "actor": actor, "expected_version": expected_version}
    if command == "start":
        return t.plan_start(**common)
    if command == "approve":
        return t.gate_approve(**common, comment=text, revision=revision)
    if command == "reject":
        return t.gate_reject(**common, reason=text, revision=revision)
    if command == "override":
        return plan_override(**common, reason=text, revision=revision)
    if command == "force-promote":
        return t.plan_force_promote(**common, reason=text, revision=revision)
    simple = {
        "promote": t.plan_promote,
        "pause": t.plan_pause,
        "resume": t.plan_resume,
        "abort": t.plan_abort,
        "retry": t.plan_retry,
        "skip": t.gate_skip,
        "verify-rollback": t.plan_rollback_verify,
    }
    return simple[command](**common, reason=text)
