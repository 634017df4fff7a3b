"""Rollout models, one module per concern."""

from rollout.models.analysis import AnalysisRun, Measurement, MetricResult, Outcome
from rollout.models.audit import AuditEntry, AuditImmutable
from rollout.models.denials import DeniedAttemptCount
from rollout.models.gates import (
    Aggregation,
    Approval,
    BaselineWindow,
    Comparator,
    Criterion,
    Gate,
    GateState,
)
from rollout.models.plans import (
    DEFAULT_GRAY_STEPS,
    DEFAULT_PHASE_DAYS,
    PHASE_ORDER,
    MigrationPlan,
    Phase,
    PhaseKind,
    PlanState,
    PlanWorkload,
)
from rollout.models.router_readings import ReadingVerdict, RouterReading
from rollout.models.routers import (
    ROUTER_FAILURES,
    RouterCall,
    RouterKind,
    RouterOutcome,
    TrafficRouter,
)
from rollout.models.webhooks import EVENT_NAMES, WebhookDelivery, WebhookSubscription

__all__ = [
    "DEFAULT_GRAY_STEPS",
    "DEFAULT_PHASE_DAYS",
    "EVENT_NAMES",
    "PHASE_ORDER",
    "Aggregation",
    "BaselineWindow",
    "AnalysisRun",
    "Approval",
    "AuditEntry",
    "AuditImmutable",
    "Comparator",
    "Criterion",
    "DeniedAttemptCount",
    "Gate",
    "GateState",
    "Measurement",
    "MetricResult",
    "MigrationPlan",
    "Outcome",
    "Phase",
    "PhaseKind",
    "PlanState",
    "PlanWorkload",
    "ROUTER_FAILURES",
    "ReadingVerdict",
    "RouterCall",
    "RouterKind",
    "RouterOutcome",
    "RouterReading",
    "TrafficRouter",
    "WebhookDelivery",
    "WebhookSubscription",
]
