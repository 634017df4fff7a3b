"""Can this process reach what it depends on? Used by /readyz and the status page."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from kombu import Connection


@dataclass(frozen=True)
class ComponentCheck:
    name: str
    ok: bool
    detail: str


def check_database() -> ComponentCheck:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return ComponentCheck("database", True, connection.vendor)
    except Exception as exc:  # noqa: BLE001 - any failure means "not ready"; report it
        return ComponentCheck("database", False, f"{type(exc).__name__}: {exc}")


def check_broker(timeout: float = 1.5) -> ComponentCheck:
    url = settings.CELERY_BROKER_URL
    try:
        with Connection(
            url,
            connect_timeout=timeout,
            transport_options=dict(settings.CELERY_BROKER_TRANSPORT_OPTIONS),
        ) as conn:
            # No retries: readiness must answer quickly and honestly.
            conn.ensure_connection(
                max_retries=1, interval_start=0, interval_step=0, timeout=timeout
            )
        return ComponentCheck("broker", True, settings.BROKER_DESCRIPTION)
    except Exception as exc:  # noqa: BLE001
        return ComponentCheck("broker", False, f"{type(exc).__name__}: {exc}")


def readiness() -> list[ComponentCheck]:
    return [check_database(), check_broker()]
