"""Per-scope API throttling: one counter per (scope, principal) and fixed window.

The scope is the view's ``throttle_scope`` or else its ``required_scope`` (``read`` when a view
names none, as in ``HasRequiredScope``), so a busy exporter pushing telemetry (``ingest``)
never eats the budget of the dashboards it also reads, and approvals (``approve``) get a small
budget of their own.
The principal is the user (id), the token (its public prefix) or, for anonymous requests, the
client address. Rates come from ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (``"600/min"``;
``None`` switches a scope off) and are read on every request, so a settings change applies at
once.

Counters live in the Django cache (Redis when configured, shared by every web process). A cache
outage must not take the API down with it: when the cache raises, the request is let through
and a warning is logged (at most once a minute per process).
"""

from __future__ import annotations

import logging
import time

from django.core.cache import cache
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from accounts.api.authentication import IntegrationPrincipal

logger = logging.getLogger(__name__)

try:  # the redis client is optional: without it the cache is never Redis
    from redis.exceptions import RedisError
except ImportError:  # pragma: no cover - redis is a dependency, but stay importable without it
    RedisError = OSError

# What a cache backend raises when its server is away: redis-py's own errors, or the OS's.
CACHE_ERRORS: tuple[type[BaseException], ...] = (RedisError, ConnectionError, OSError, TimeoutError)

_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_last_warning = 0.0


def parse_rate(rate: str) -> tuple[int, int]:
    """``"600/min"`` → ``(600, 60)``; the period is read from its first letter (s, m, h, d)."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip()[0].lower()]


def _warn_cache_down(exc: BaseException) -> None:
    global _last_warning
    now = time.monotonic()
    if now - _last_warning >= 60:
        _last_warning = now
        logger.warning("API throttling is off: the cache is unavailable (%s)", exc)


class ScopedPrincipalThrottle(BaseThrottle):
    """Fixed-window counter keyed by ``(required_scope, principal)``; 429 with Retry-After."""

    cache_format = "throttle:{scope}:{ident}:{window}"
    timer = staticmethod(time.time)

    def __init__(self) -> None:
        self.wait_seconds: float | None = None

    @staticmethod
    def scope_of(view) -> str:
        # ``throttle_scope`` lets a view without a scope check (token management) pick a budget.
        return (
            getattr(view, "throttle_scope", None) or getattr(view, "required_scope", None) or "read"
        )

    @staticmethod
    def rate_for(scope: str) -> str | None:
        return (api_settings.DEFAULT_THROTTLE_RATES or {}).get(scope)

    def principal_ident(self, request) -> str:
        user = getattr(request, "user", None)
        if isinstance(user, IntegrationPrincipal):
            return f"token:{user.token.prefix}"
        if user is not None and getattr(user, "is_authenticated", False):
            return f"user:{user.pk}"
        return f"ip:{self.get_ident(request)}"

    def allow_request(self, request, view) -> bool:
        scope = self.scope_of(view)
        rate = self.rate_for(scope)
        if not rate:
            return True
        limit, period = parse_rate(rate)
        now = self.timer()
        window = int(now // period)
        key = self.cache_format.format(
            scope=scope, ident=self.principal_ident(request), window=window
        )
        try:
            count = self._count(key, period)
        except CACHE_ERRORS as exc:
            _warn_cache_down(exc)
            return True
        if count <= limit:
            return True
        self.wait_seconds = max(1.0, (window + 1) * period - now)
        return False

    @staticmethod
    def _count(key: str, period: int) -> int:
        # add() is a no-op when the key exists; incr() is atomic on Redis.
        cache.add(key, 0, timeout=period + 1)
        try:
            return cache.incr(key)
        except ValueError:
            # The key expired between add() and incr(): this is the window's first request.
            cache.set(key, 1, timeout=period + 1)
            return 1

    def wait(self) -> float | None:
        return self.wait_seconds


class _PageView:
    """What the throttle reads of a view (its scope), for pages that are not DRF views."""

    def __init__(self, scope: str) -> None:
        self.throttle_scope = scope


def page_throttle_wait(request, scope: str) -> float | None:
    """The API's budget for a page's command: ``None`` when the request may go on, else the
    seconds to wait. Pages and the API count against the same ``(scope, principal)`` counter,
    so switching from the API to the HTML form buys no extra attempts."""
    throttle = ScopedPrincipalThrottle()
    if throttle.allow_request(request, _PageView(scope)):
        return None
    return throttle.wait() or 1.0
