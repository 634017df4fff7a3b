"""Small, strict readers for settings that come from the environment.

Every setting the portal reads from the environment goes through these helpers so a typo
(``DEBUG=ture``) fails loudly at start-up instead of silently meaning something else.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/0/true/false/yes/no/on/off, got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def demo_secret_key(var_dir: Path) -> str:
    """Return the demo's secret key, generating it once and keeping it under ``var/``.

    Keeping it on disk means sessions survive a restart of ``make demo``.
    """
    path = var_dir / "secret_key"
    if path.exists():
        return path.read_text().strip()
    var_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    path.write_text(key)
    path.chmod(0o600)
    return key


def tcp_reachable(host: str, port: int, timeout: float = 0.3) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def resolve_broker(var_dir: Path) -> tuple[str, dict, str]:
    """Pick the Celery broker: explicit URL, else local Redis if reachable, else the filesystem.

    Returns ``(url, transport_options, description)``. The filesystem transport lets web,
    worker and beat on one host share queues through folders under ``var/`` with no server.
    """
    explicit = env_str("CELERY_BROKER_URL") or env_str("REDIS_URL")
    if explicit:
        parsed = urlparse(explicit)
        if explicit.startswith("filesystem://"):
            return (
                explicit,
                filesystem_transport_options(var_dir),
                f"embedded filesystem broker under {var_dir / 'broker'}",
            )
        where = f"{parsed.scheme} broker at {parsed.hostname}:{parsed.port or ''}"
        if parsed.scheme in ("redis", "rediss"):
            # Say which database: two portals (or a portal and its tests) sharing one Redis
            # must not share a database, and the banner is where people look.
            where += f", database {redis_database(parsed.path)}"
        return explicit, {}, where
    if tcp_reachable("127.0.0.1", 6379):
        return (
            "redis://127.0.0.1:6379/0",
            {},
            "redis broker at 127.0.0.1:6379, database 0 (auto-detected)",
        )
    return (
        "filesystem://",
        filesystem_transport_options(var_dir),
        f"embedded filesystem broker under {var_dir / 'broker'} (no Redis reachable)",
    )


def redis_database(path: str) -> int:
    """The database number of a Redis URL's path (``/3`` → 3; none → 0, Redis' default)."""
    digits = path.strip("/")
    return int(digits) if digits.isdigit() else 0


def filesystem_transport_options(var_dir: Path) -> dict:
    queue = var_dir / "broker" / "queue"
    processed = var_dir / "broker" / "processed"
    control = var_dir / "broker" / "control"
    for folder in (queue, processed, control):
        folder.mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(queue),
        "data_folder_out": str(queue),
        "processed_folder": str(processed),
        "control_folder": str(control),
        "store_processed": False,
    }
