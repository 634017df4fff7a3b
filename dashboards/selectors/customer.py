"""What a customer's home leads with: their cost over the last day and their migrations.

Cost comes from the cost app's showback and customer ledger (the same figures as /cost/),
migrations from the rollout app's tenant-scoped plans (the same rows as /migrations/)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from cost.hours import WindowNotCovered
from cost.selectors import TenantLedger, customer_ledger, tenant_showback
from rollout.models import MigrationPlan, PlanState
from rollout.selectors import plans_visible_to

COST_WINDOW = timedelta(hours=24)
PHASES = ("pilot", "gray", "full")


@dataclass
class PlanProgress:
    """One migration plan's standing: state, phase reached (of pilot → gray → full), gray step."""

    plan: MigrationPlan
    phase_number: int  # 1..3 for the phase it is in, 0 before it starts
    step_percent: int | None

    @property
    def finished(self) -> bool:
        return self.plan.state in (PlanState.SUCCEEDED, PlanState.ABORTED, PlanState.ROLLED_BACK)


@dataclass
class CustomerSummary:
    cost_window_hours: float
    cost_total: float | None  # billed over the window (None: nothing billed, no data)
    currency: str
    covered_hours: float
    ledger: TenantLedger | None
    plans: list[PlanProgress] = field(default_factory=list)
    refusal: str = ""  # the window needs ledger hours that are gone (cost.hours)


def customer_summary(user, *, now: datetime | None = None) -> CustomerSummary:
    end = now or datetime.now(tz=UTC)
    start = end - COST_WINDOW
    refusal = ""
    try:
        rows = tenant_showback(user.tenant_id, start, end) if user.tenant_id else []
    except WindowNotCovered as refused:
        rows, refusal = [], str(refused)
    ledger = customer_ledger(user.tenant.slug, start, end) if user.tenant_id else None
    plans = [
        PlanProgress(
            plan,
            PHASES.index(plan.current_phase) + 1 if plan.current_phase in PHASES else 0,
            plan.current_step_percent,
        )
        for plan in plans_visible_to(user).order_by("-pk")[:10]
    ]
    return CustomerSummary(
        cost_window_hours=COST_WINDOW.total_seconds() / 3600,
        cost_total=sum(r.cost_window for r in rows) if rows else None,
        currency=rows[0].currency if rows else (ledger.currency if ledger else ""),
        covered_hours=max((r.covered_hours for r in rows), default=0.0),
        ledger=ledger,
        plans=plans,
        refusal=refusal,
    )
