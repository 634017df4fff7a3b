"""Per-scope API throttling: a budget per (scope, principal), 429 with Retry-After, and a cache
outage that lets requests through instead of failing them."""

from __future__ import annotations

import logging

import pytest
from django.core.cache import caches
from rest_framework.test import APIClient

from accounts.services.tokens import token_create
from cluster_portal.web import throttling

NOW = 1_900_000_000.0  # inside one minute window: [1_899_999_960, 1_900_000_020)


@pytest.fixture
def low_rates(settings, monkeypatch):
    """Two reads, three ingests a minute, a private cache and a frozen clock."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "throttling-tests",
        }
    }
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"read": "2/min", "ingest": "3/min", "approve": "1/min"},
    }
    store = caches["default"]
    store.clear()
    clock = {"now": NOW}
    monkeypatch.setattr(throttling.ScopedPrincipalThrottle, "timer", lambda self: clock["now"])
    yield clock
    store.clear()


def bearer(plaintext: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    return client


def batch(ts: int = 1_780_000_000) -> dict:
    return {
        "samples": [
            {
                "metric": "accelerator_utilization_ratio",
                "cluster": "unified-a",
                "entity_kind": "accelerator",
                "entity": "node1/0",
                "ts": ts,
                "value": 0.5,
            }
        ]
    }


@pytest.mark.django_db
def test_the_request_after_the_budget_is_a_429_with_retry_after(low_rates, client_as):
    client = client_as("customer")
    assert [client.get("/api/v1/me/").status_code for _ in range(2)] == [200, 200]
    low_rates["now"] = NOW + 15  # 5 s before the window ends
    refused = client.get("/api/v1/alerts/")  # another read endpoint: the same read budget
    assert refused.status_code == 429
    assert refused["Retry-After"] == "5"
    body = refused.json()
    assert body["code"] == "throttled" and "5 seconds" in body["detail"]
    # The next window starts afresh.
    low_rates["now"] = NOW + 21
    assert client.get("/api/v1/me/").status_code == 200


@pytest.mark.django_db
def test_another_principal_has_its_own_budget(low_rates, client_as, tenants):
    customer = client_as("customer")
    for _ in range(2):
        customer.get("/api/v1/me/")
    assert customer.get("/api/v1/me/").status_code == 429
    # Another user, and a token, each start with a full budget.
    assert APIClient().get("/api/v1/me/").status_code == 401  # anonymous is never let in
    operator = APIClient()
    from accounts.models import User

    operator.force_authenticate(User.objects.get(username="op"))
    assert [operator.get("/api/v1/me/").status_code for _ in range(2)] == [200, 200]
    token = bearer(token_create(name="r", scopes=["read"], tenant=tenants["acme"]).plaintext)
    assert [token.get("/api/v1/me/").status_code for _ in range(3)] == [200, 200, 429]
    # Two tokens of the same tenant do not share a budget either.
    other = bearer(token_create(name="r2", scopes=["read"], tenant=tenants["acme"]).plaintext)
    assert other.get("/api/v1/me/").status_code == 200


@pytest.mark.django_db
def test_scopes_are_counted_separately(low_rates, cluster):
    issued = token_create(name="exporter", scopes=["ingest", "read"])
    client = bearer(issued.plaintext)
    ingests = [
        client.post("/api/v1/telemetry/samples/", batch(1_780_000_000 + i), format="json")
        for i in range(4)
    ]
    assert [r.status_code for r in ingests[:3]] == [201] * 3, ingests[0].content
    assert ingests[3].status_code == 429
    # Pushing used up the ingest budget, not the read one.
    assert [client.get("/api/v1/me/").status_code for _ in range(3)] == [200, 200, 429]


@pytest.mark.django_db
def test_a_scope_without_a_rate_is_not_throttled(low_rates, settings, client_as):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"read": None, "ingest": "3/min", "approve": "1/min"},
    }
    client = client_as("customer")
    assert {client.get("/api/v1/me/").status_code for _ in range(5)} == {200}


class DownCache:
    """A cache whose server is gone: every call raises like a lost Redis connection."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def add(self, *args, **kwargs):
        raise self.error

    incr = set = add


def only_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "cluster_portal.web.throttling"]


@pytest.mark.django_db
@pytest.mark.parametrize("error", [ConnectionError("refused"), TimeoutError("timed out")])
def test_a_cache_outage_lets_requests_through_and_warns_once(
    low_rates, client_as, monkeypatch, caplog, error
):
    monkeypatch.setattr(throttling, "cache", DownCache(error))
    monkeypatch.setattr(throttling, "_last_warning", 0.0)
    monkeypatch.setattr(throttling.time, "monotonic", lambda: 1_000.0)
    client = client_as("customer")
    with caplog.at_level(logging.WARNING, logger="cluster_portal.web.throttling"):
        answers = [client.get("/api/v1/me/").status_code for _ in range(4)]
    assert answers == [200] * 4  # over the 2/min budget, but nothing can count: fail open
    warnings = only_warnings(caplog)
    assert len(warnings) == 1  # once a minute, not once a request
    assert "cache is unavailable" in warnings[0]


@pytest.mark.django_db
def test_a_real_redis_cache_that_is_down_fails_open(low_rates, settings, client_as, caplog):
    # Nothing listens on port 1: redis-py raises its own ConnectionError on every call.
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
            "OPTIONS": {"socket_connect_timeout": 0.5},
        }
    }
    client = client_as("customer")
    with caplog.at_level(logging.WARNING, logger="cluster_portal.web.throttling"):
        answers = [client.get("/api/v1/me/").status_code for _ in range(3)]
    assert answers == [200] * 3


def test_rates_parse_like_drf():
    assert throttling.parse_rate("600/min") == (600, 60)
    assert throttling.parse_rate("5/s") == (5, 1)
    assert throttling.parse_rate("100/hour") == (100, 3600)
    assert throttling.parse_rate("1/day") == (1, 86400)


def test_the_default_rates_are_generous(settings):
    from rest_framework.settings import api_settings

    rates = {s: throttling.parse_rate(r) for s, r in api_settings.DEFAULT_THROTTLE_RATES.items()}
    assert rates == {
        "read": (600, 60),
        "ingest": (1200, 60),
        "approve": (60, 60),
        # Prometheus drops a batch answered 429 for good: remote-write has its own budget.
        "remote_write": (60000, 60),
    }
    assert api_settings.DEFAULT_THROTTLE_CLASSES == [throttling.ScopedPrincipalThrottle]
