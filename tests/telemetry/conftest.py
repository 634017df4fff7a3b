"""Fixtures of the telemetry tests that run a real Prometheus."""

from tests.telemetry.prometheus_fixtures import exporters, prometheus_required  # noqa: F401
