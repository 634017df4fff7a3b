"""Cluster Portal digital twin: simulated scheduler (split vs unified) and unified memory pool.

Pure Python + NumPy; never imports Django or any other project module. Public API:

* :func:`default_scenario` - a credible default mix scaled to the cluster size.
* :class:`Scenario` (+ :class:`Topology`, :class:`TrainingJob`, :class:`InferenceService`,
  :class:`Policy`, :class:`Faults`) - validated dataclasses with JSON round-trip.
* :class:`Engine` - ``step()``, ``run_until(t)``, ``step_memory_pool(seconds)``,
  ``set_traffic_share(name, share)``, ``snapshot()``, ``topology()``, ``workloads()``,
  ``summary()``, ``save_state()`` / ``Engine.load_state(bytes)``.
* :class:`Snapshot` - per-step metrics; ``rows()`` yields
  ``(metric_name, entity_kind, entity_key, value)``.
* :data:`METRICS` - the metric catalogue (name, unit, entity_kind, description).
"""

from .catalog import HARDWARE, MODELS, HardwareSpec, ModelSpec
from .engine import Engine
from .metrics_catalog import METRICS, MetricSpec
from .models_hf import register_user_models
from .scenario import (
    Faults,
    InferenceService,
    Policy,
    Scenario,
    Topology,
    TrainingJob,
    default_scenario,
)
from .snapshot import Snapshot
from .traces import TraceError

__all__ = [
    "Engine",
    "Faults",
    "HARDWARE",
    "HardwareSpec",
    "InferenceService",
    "METRICS",
    "MODELS",
    "MetricSpec",
    "ModelSpec",
    "Policy",
    "Scenario",
    "Snapshot",
    "Topology",
    "TraceError",
    "TrainingJob",
    "default_scenario",
]

register_user_models()  # operator-imported models (`model add`), once per process
