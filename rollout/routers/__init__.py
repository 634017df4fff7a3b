"""Traffic routers: the small interface a plan moves real traffic through (``base``) and its
three kinds — the digital twin, HAProxy's Runtime API and a deploy tool's webhook.

The wire contracts are documented in ``docs/traffic-routers.md``.
"""

from __future__ import annotations

from rollout.routers.base import Confirmation, Desired, Router, RouterError
from rollout.routers.haproxy import HAProxyRouter
from rollout.routers.twin import TwinRouter
from rollout.routers.webhook import WebhookRouter

__all__ = [
    "Confirmation",
    "Desired",
    "HAProxyRouter",
    "Router",
    "RouterError",
    "TwinRouter",
    "WebhookRouter",
    "router_client",
]


def router_client(config) -> Router:
    """The client for a :class:`rollout.models.TrafficRouter` row (``None``: the twin)."""
    if config is None or config.kind == "twin":
        return TwinRouter()
    if config.kind == "haproxy":
        return HAProxyRouter(
            address=config.haproxy_address,
            backend=config.haproxy_backend,
            source_server=config.haproxy_source_server,
            target_server=config.haproxy_target_server,
            deadline_seconds=config.timeout_seconds,
        )
    return WebhookRouter(
        url=config.webhook_url,
        secret_ref=config.webhook_secret_ref,
        deadline_seconds=config.timeout_seconds,
        max_attempts=config.max_attempts,
    )
