"""A few seconds of shared caching for read-only payloads that many viewers refresh.

Ten operators watching one cluster refresh the same figures every 15 s; computing them once
per few seconds instead of once per viewer keeps the server's cores free. The key includes the
caller's scope (staff, or the customer's tenant), so tenants never share an entry.

Two things keep the cache from stampeding when an entry ages (measured in BENCHMARKS.md,
"Dashboard data endpoints"):

- **one builder per key** (single flight): the first request to find an entry missing or
  stale takes a short lock in the cache (``cache.add`` is atomic on Redis and locmem) and
  computes; the others do not compute the same payload at the same time.
- **stale while revalidate**: an entry stays readable for ``DASHBOARD_CACHE_STALE_SECONDS``
  after it stops being fresh; while one request recomputes, the others answer with the
  previous payload at once. Its ``updated`` stamp says how old it is. When there is no entry
  at all, the others wait briefly for the builder's result instead of computing it too.

The cache is an optimisation, never a dependency: when it is unreachable (the Redis behind it
is down) the payload is computed for this request and the error is logged, so reads keep
answering 200 while the broker is away.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache
from django.utils.translation import get_language
from rest_framework.request import Request

from accounts.selectors.scoping import principal_sees_all
from cluster_portal.web.jsonbody import json_bytes

logger = logging.getLogger(__name__)
T = TypeVar("T")

# How long a builder may hold the lock before others stop waiting for it (a killed builder
# must not block a key for longer than this).
LOCK_SECONDS = 30
# How long a request without any entry waits for another request's build, and how often it
# looks; past that it computes the payload itself (the builder may have died).
WAIT_SECONDS = 10.0
POLL_SECONDS = 0.02


# The time range's parameters: a payload that does not depend on the range (a fleet
# snapshot) is shared across ranges by leaving them out of its key.
RANGE_PARAMS = frozenset({"range", "start", "end"})


def _scope_key(request: Request, name: str, extra: dict, ignore: frozenset = frozenset()) -> str:
    scope = "staff" if principal_sees_all(request.user) else f"tenant:{request.user.tenant_id}"
    skip = ignore | {"format"}
    params = sorted((k, v) for k, v in request.query_params.items() if k not in skip)
    # Payloads carry translated labels (KPIs, chart titles, table headings): one per language.
    language = get_language() or ""
    digest = hashlib.sha256(repr((name, scope, language, params, sorted(extra.items()))).encode())
    return "payload:" + digest.hexdigest()


def _store(key: str, payload: object, fresh_seconds: float, stale_seconds: float) -> None:
    entry = {"payload": payload, "fresh_until": time.time() + fresh_seconds}
    try:
        cache.set(key, entry, fresh_seconds + stale_seconds)
    except Exception as exc:  # noqa: BLE001 - any cache failure means "no cache"
        logger.warning("dashboard cache unavailable, not storing %s: %s", key, exc)


def _build_and_store(
    key: str, build: Callable[[], T], fresh_seconds: float, stale_seconds: float
) -> T:
    try:
        payload = build()
        _store(key, payload, fresh_seconds, stale_seconds)
        return payload
    finally:
        try:
            cache.delete(key + ":lock")
        except Exception:  # noqa: BLE001 - the lock expires on its own
            pass


def cached_payload(
    request: Request,
    name: str,
    build: Callable[[], dict],
    *,
    ignore_params: frozenset = frozenset(),
    **extra,
) -> dict:
    """``build()``'s result, shared for ``DASHBOARD_CACHE_SECONDS`` within one scope.

    ``ignore_params`` are query parameters the payload does not depend on (e.g.
    :data:`RANGE_PARAMS` for a snapshot): requests differing only in them share an entry."""
    return _cached(request, name, build, extra, ignore_params)


def cached_json(
    request: Request,
    name: str,
    build: Callable[[], dict],
    *,
    ignore_params: frozenset = frozenset(),
    **extra,
) -> bytes:
    """``build()``'s result rendered to JSON (:func:`~cluster_portal.web.jsonbody.json_bytes`),
    shared like :func:`cached_payload`.

    A hit sends the stored bytes: re-encoding a 300 KiB payload per viewer was about half of
    what a cache hit cost."""
    return _cached(request, f"{name}:json", lambda: json_bytes(build()), extra, ignore_params)


def _cached(
    request: Request,
    name: str,
    build: Callable[[], T],
    extra: dict,
    ignore_params: frozenset = frozenset(),
) -> T:
    fresh_seconds = settings.DASHBOARD_CACHE_SECONDS
    if not fresh_seconds:
        return build()
    stale_seconds = getattr(settings, "DASHBOARD_CACHE_STALE_SECONDS", 2 * fresh_seconds)
    key = _scope_key(request, name, extra, ignore_params)
    return _cached_by_key(key, build, fresh_seconds, stale_seconds)


def _cached_by_key(
    key: str, build: Callable[[], T], fresh_seconds: float, stale_seconds: float
) -> T:
    """One builder per key; a stale entry answers while it rebuilds; waiters without one wait
    briefly for the builder (see the module docstring)."""
    try:
        entry = cache.get(key)
        if entry is not None and entry["fresh_until"] > time.time():
            return entry["payload"]
        got_lock = cache.add(key + ":lock", 1, LOCK_SECONDS)
    except Exception as exc:  # noqa: BLE001 - any cache failure means "no cache"
        logger.warning("dashboard cache unavailable, computing %s uncached: %s", key, exc)
        return build()
    if got_lock:
        return _build_and_store(key, build, fresh_seconds, stale_seconds)
    if entry is not None:
        # Someone is already recomputing: the previous payload answers now.
        return entry["payload"]
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        try:
            entry = cache.get(key)
        except Exception:  # noqa: BLE001
            break
        if entry is not None:
            return entry["payload"]
    return build()


def shared_read(name: str, identity: object, compute: Callable[[], T]) -> T:
    """``compute()``'s result shared by every caller for ``DASHBOARD_CACHE_SECONDS``.

    For reads that do not depend on who asks or on the time range (the fleet's newest values,
    a cluster's workload roster): requests for ranges no one asked before still read them once
    per few seconds. Callers apply tenant scoping to the result, exactly as without the cache.
    Same machinery as the payloads (one builder per key), but never served stale: the newest
    values are at most ``DASHBOARD_CACHE_SECONDS`` old. A cache that is down only means
    computing."""
    seconds = settings.DASHBOARD_CACHE_SECONDS
    if not seconds:
        return compute()
    key = f"shared:{name}:" + hashlib.sha256(repr(identity).encode()).hexdigest()
    return _cached_by_key(key, compute, seconds, 0)
