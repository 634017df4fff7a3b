"""The dashboard payload cache: one builder per key, stale answers while it rebuilds."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from django.core.cache import cache

from cluster_portal.web import caching
from cluster_portal.web.caching import cached_payload


@pytest.fixture
def fresh_cache(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    settings.DASHBOARD_CACHE_SECONDS = 10
    settings.DASHBOARD_CACHE_STALE_SECONDS = 20
    cache.clear()
    yield
    cache.clear()


def staff_request(**params) -> SimpleNamespace:
    return SimpleNamespace(user=SimpleNamespace(sees_all_tenants=True), query_params=params)


def tenant_request(tenant_id: int, **params) -> SimpleNamespace:
    user = SimpleNamespace(sees_all_tenants=False, tenant_id=tenant_id)
    return SimpleNamespace(user=user, query_params=params)


def test_concurrent_requests_for_a_missing_entry_build_it_once(fresh_cache):
    builds = []

    def slow_build() -> dict:
        builds.append(1)
        time.sleep(0.3)
        return {"n": len(builds)}

    results = []
    threads = [
        threading.Thread(
            target=lambda: results.append(
                cached_payload(staff_request(range="6h"), "x", slow_build)
            )
        )
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1
    assert results == [{"n": 1}] * 6


def test_a_stale_entry_answers_while_another_request_rebuilds_it(fresh_cache):
    request = staff_request(range="24h")
    assert cached_payload(request, "x", lambda: {"v": "old"}) == {"v": "old"}
    # Age the entry past its fresh time but within the stale grace.
    key = caching._scope_key(request, "x", {})
    entry = cache.get(key)
    entry["fresh_until"] = 0
    cache.set(key, entry, 30)
    cache.add(key + ":lock", 1, 30)  # someone else is rebuilding

    def must_not_build() -> dict:
        raise AssertionError("a second builder ran while the lock was held")

    assert cached_payload(request, "x", must_not_build) == {"v": "old"}


def test_a_stale_entry_is_rebuilt_by_the_first_request_that_sees_it(fresh_cache):
    request = staff_request(range="24h")
    cached_payload(request, "x", lambda: {"v": "old"})
    key = caching._scope_key(request, "x", {})
    entry = cache.get(key)
    entry["fresh_until"] = 0
    cache.set(key, entry, 30)
    assert cached_payload(request, "x", lambda: {"v": "new"}) == {"v": "new"}
    assert cached_payload(request, "x", lambda: {"v": "newer"}) == {"v": "new"}
    assert cache.get(key + ":lock") is None


def test_a_failed_build_releases_the_lock_and_stores_nothing(fresh_cache):
    request = staff_request(range="1h")

    def broken() -> dict:
        raise RuntimeError("database went away")

    with pytest.raises(RuntimeError):
        cached_payload(request, "x", broken)
    key = caching._scope_key(request, "x", {})
    assert cache.get(key) is None
    assert cache.get(key + ":lock") is None
    assert cached_payload(request, "x", lambda: {"v": 1}) == {"v": 1}


def test_tenants_never_share_an_entry_even_while_it_is_stale(fresh_cache):
    cached_payload(tenant_request(1), "x", lambda: {"tenant": 1})
    assert cached_payload(tenant_request(2), "x", lambda: {"tenant": 2}) == {"tenant": 2}
    assert cached_payload(staff_request(), "x", lambda: {"staff": True}) == {"staff": True}
    assert cached_payload(tenant_request(1), "x", lambda: {"tenant": "recomputed"}) == {"tenant": 1}


def test_a_waiter_computes_itself_when_the_builder_never_delivers(fresh_cache, monkeypatch):
    monkeypatch.setattr(caching, "WAIT_SECONDS", 0.1)
    request = staff_request(range="7d")
    key = caching._scope_key(request, "x", {})
    cache.add(key + ":lock", 1, 30)  # a builder that was killed mid-build
    assert cached_payload(request, "x", lambda: {"v": "own"}) == {"v": "own"}
