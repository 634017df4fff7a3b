"""Monitoring models, one module per concern."""

from monitoring.models.alerts import Alert, AlertRule, Severity
from monitoring.models.cost import CostAssumptions
from monitoring.models.exporters import ExporterTarget
from monitoring.models.frames import Frame, FrameLayout
from monitoring.models.heartbeats import Heartbeat
from monitoring.models.inventory import (
    Accelerator,
    Cluster,
    Confidence,
    HardwareModel,
    Link,
    Node,
    Rack,
    Supernode,
    Workload,
)
from monitoring.models.telemetry import (
    Entity,
    EntityKind,
    IngestionBatch,
    MetricDefinition,
    Rollup,
    RollupWatermark,
    Sample,
)
from monitoring.models.tenancy import Tenant, User
from monitoring.models.tokens import IntegrationToken

__all__ = [
    "Accelerator",
    "Alert",
    "AlertRule",
    "ExporterTarget",
    "Frame",
    "FrameLayout",
    "Severity",
    "Cluster",
    "CostAssumptions",
    "Confidence",
    "Entity",
    "EntityKind",
    "HardwareModel",
    "Heartbeat",
    "IngestionBatch",
    "IntegrationToken",
    "Link",
    "MetricDefinition",
    "Node",
    "Rack",
    "Rollup",
    "RollupWatermark",
    "Sample",
    "Supernode",
    "Tenant",
    "User",
    "Workload",
]
