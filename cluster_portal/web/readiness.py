"""Can this process reach what it depends on? Used by /readyz and the status page."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from django.conf import settings
from django.db import connection
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from kombu import Connection

from cluster_portal.env import redis_database

# The components' names as the status page shows them; ``ComponentCheck.name`` stays the
# code /readyz answers with.
COMPONENT_LABELS = {"database": gettext_lazy("database"), "broker": gettext_lazy("broker")}


@dataclass(frozen=True)
class ComponentCheck:
    name: str
    ok: bool
    detail: str

    @property
    def label(self) -> str:
        return str(COMPONENT_LABELS.get(self.name, self.name))


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


def broker_description() -> str:
    """``settings.BROKER_DESCRIPTION`` (English, for logs and the start-up banner) said again in
    the reader's language, from the broker URL and options it was made of."""
    url = settings.CELERY_BROKER_URL
    described = settings.BROKER_DESCRIPTION
    if url.startswith("filesystem://"):
        folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("data_folder_in", "")
        text = _("embedded filesystem broker under %(path)s") % {
            "path": folder.removesuffix("/queue")
        }
    else:
        parsed = urlparse(url)
        text = _("%(scheme)s broker at %(host)s:%(port)s") % {
            "scheme": parsed.scheme,
            "host": parsed.hostname or "",
            "port": parsed.port or "",
        }
        if parsed.scheme in ("redis", "rediss"):
            text += _(", database %(number)s") % {"number": redis_database(parsed.path)}
    if "(auto-detected)" in described:
        text += " " + _("(auto-detected)")
    elif "(no Redis reachable)" in described:
        text += " " + _("(no Redis reachable)")
    return text


def readiness() -> list[ComponentCheck]:
    return [check_database(), check_broker()]
