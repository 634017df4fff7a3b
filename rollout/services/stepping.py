"""Starting a step's traffic and returning it, through the plan's routers.

Shared by the transitions (start, retry, every promotion, abort) and the automatic rollback:
the shares are committed as router intents (:func:`rollout.services.traffic.traffic_route`)
with the plan's move, sent after the commit (:mod:`rollout.services.router_dispatch`), and
what the routers read back decides where the plan goes next —

- confirmed: running, the analysis clock starting at the confirmation;
- pending (a deploy tool will call back): running, no measurement due until the callback;
- refused, timed out, garbage, another share: **paused** with that reason code and the gate
  ``traffic_unconfirmed`` (``retry`` pushes again); nothing is promoted;
- a restore (abort, rollback) not verified: ``rollback_unconfirmed``, alerting through the
  ``rollback_unconfirmed`` webhook event, until ``verify-rollback`` confirms it
  (:func:`rollout.services.traffic.restore_verified`).
"""

from __future__ import annotations

from datetime import datetime

from rollout.models import Gate, MigrationPlan, PlanState
from rollout.services.analysis import analysis_start
from rollout.services.audit import Actor
from rollout.services.plans import plan_move
from rollout.services.traffic import traffic_route


def step_traffic_start(
    plan: MigrationPlan,
    gate: Gate,
    *,
    actor: Actor,
    action: str,
    now: datetime,
    reason: str = "",
    obj=None,
    force: bool = False,
) -> bool:
    """Route the plan's shares, then run the gate's analysis; ``True`` if it runs now, ``False``
    when it waits for real routers' read-back (committed after this transaction).
    ``force``: push every real router's share even where it was confirmed (``retry``)."""
    routed = traffic_route(plan, actor=actor, force=force)
    plan.resume_state = ""
    plan_move(plan, to=PlanState.RUNNING, action=action, actor=actor, reason=reason, obj=obj)
    if routed.pending:
        # Real routers are asked after the commit; the analysis starts at their read-back
        # (rollout.services.router_dispatch), or the step pauses on their refusal.
        return False
    analysis_start(gate=gate, now=now, **routed.clock())
    return True
