"""The security regression suite reuses the workflow and telemetry fixtures."""

from tests.rollout.conftest import approvers, clusters, plan_factory, workloads  # noqa: F401
