"""Scenario dataclasses, validation, JSON round-trip and the default workload mix."""

from .defaults import TENANTS, default_scenario
from .types import Faults, InferenceService, Policy, Scenario, Topology, TrainingJob

__all__ = [
    "Faults",
    "InferenceService",
    "Policy",
    "Scenario",
    "TENANTS",
    "Topology",
    "TrainingJob",
    "default_scenario",
]
