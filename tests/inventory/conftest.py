"""Fixtures the inventory tests share with telemetry: exporters and a real Prometheus."""

from tests.telemetry.prometheus_fixtures import exporters, prometheus_required  # noqa: F401
