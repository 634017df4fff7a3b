"""Fixtures of the telemetry tests that run a real Prometheus."""

from tests.telemetry.prometheus_fixtures import (  # noqa: F401
    exporters,
    prometheus_required,
    victoria_metrics,
)
