"""A few seconds of shared caching for read-only payloads that many viewers refresh.

Ten operators watching one cluster refresh the same figures every 15 s; computing them once
per few seconds instead of once per viewer keeps the server's cores free. The key includes the
caller's scope (staff, or the customer's tenant), so tenants never share an entry.

The cache is an optimisation, never a dependency: when it is unreachable (the Redis behind it
is down) the payload is computed for this request and the error is logged, so reads keep
answering 200 while the broker is away.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.utils.translation import get_language
from rest_framework.request import Request

from accounts.selectors.scoping import principal_sees_all

logger = logging.getLogger(__name__)


def cached_payload(request: Request, name: str, build: Callable[[], dict], **extra) -> dict:
    """``build()``'s result, shared for ``DASHBOARD_CACHE_SECONDS`` within one scope."""
    seconds = settings.DASHBOARD_CACHE_SECONDS
    if not seconds:
        return build()
    scope = "staff" if principal_sees_all(request.user) else f"tenant:{request.user.tenant_id}"
    params = sorted((k, v) for k, v in request.query_params.items() if k != "format")
    # Payloads carry translated labels (KPIs, chart titles, table headings): one per language.
    language = get_language() or ""
    identity = (name, scope, language, params, sorted(extra.items()))
    key = "payload:" + hashlib.sha256(repr(identity).encode()).hexdigest()
    try:
        payload = cache.get(key)
    except Exception as exc:  # noqa: BLE001 - any cache failure means "no cache"
        logger.warning("dashboard cache unavailable, computing %s uncached: %s", name, exc)
        return build()
    if payload is None:
        payload = build()
        try:
            cache.set(key, payload, seconds)
        except Exception as exc:  # noqa: BLE001
            logger.warning("dashboard cache unavailable, not storing %s: %s", name, exc)
    return payload
