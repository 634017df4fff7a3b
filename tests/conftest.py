"""Shared fixtures: tenants, one user per role, logged-in clients, and the run's backends."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.people import PASSWORD, make_tenants, make_users

pytest_plugins = ["tests.telemetry_fixtures"]

__all__ = ["PASSWORD"]


def pytest_report_header(config) -> list[str]:
    db = settings.DATABASES["default"]
    engine = db["ENGINE"].rsplit(".", 1)[-1]
    return [
        f"cluster-portal database: {engine} ({db.get('HOST') or db['NAME']})",
        f"cluster-portal broker: {settings.BROKER_DESCRIPTION}",
    ]


def pytest_runtest_setup(item) -> None:
    # ``@pytest.mark.postgresql_only("why")``: the test measures what only PostgreSQL does
    # (its statements, locks or constraint timing); on SQLite (the demo) it is skipped, saying why.
    marker = item.get_closest_marker("postgresql_only")
    if marker is not None and "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
        pytest.skip(f"PostgreSQL only: {reason}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    # After a transactional test the runner flushes the database; SQLite does that with
    # DELETE, which the append-only audit triggers refuse unless lifted (rollout/db_guard.py).
    # PostgreSQL flushes with TRUNCATE and ignores this.
    from rollout.db_guard import audit_rows_unlocked
    from telemetry.catalogue.known import KNOWN
    from telemetry.families.series_cache import SERIES
    from telemetry.store.frame_memo import rollups_forget
    from telemetry.store.provenance import source_ids_forget

    try:
        with audit_rows_unlocked():
            return (yield)
    finally:
        # The ingestion memo outlives a test's rolled-back rows: start each test without it.
        KNOWN.clear()
        SERIES.clear()
        source_ids_forget()
        rollups_forget()


@pytest.fixture
def tenants(db) -> dict:
    return make_tenants()


@pytest.fixture
def users(tenants) -> dict:
    """One user per role: ``operator``, ``approver``, ``customer`` (acme), ``other_customer``."""
    return make_users(tenants)


@pytest.fixture
def client_as(client, users):
    """``client_as("operator")`` returns the test client logged in as that role's user."""

    def login(role: str):
        client.force_login(users[role])
        return client

    return login


@pytest.fixture(autouse=True, scope="session")
def router_sockets_under_pytest_temp(tmp_path_factory):
    # The real HAProxies the tests start keep their Runtime API sockets under pytest's
    # temporary folder; routers may name sockets only under ROUTER_SOCKET_DIRS.
    base = str(tmp_path_factory.getbasetemp())
    settings.ROUTER_SOCKET_DIRS = [*settings.ROUTER_SOCKET_DIRS, base]
    yield


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # PBKDF2's deliberate slowness protects real logins; in tests it only costs minutes.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def no_dashboard_cache(settings):
    # Tests change data between requests; the few-second payload cache has its own test.
    settings.DASHBOARD_CACHE_SECONDS = 0


@pytest.fixture
def dashboard_cache(settings):
    """The payload cache on (30 s), emptied before and after: for tests of what it shares."""
    from django.core.cache import cache

    settings.DASHBOARD_CACHE_SECONDS = 30
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def no_stale_promql_sources():
    # The read API caches which clusters have a PromQL data source for a few seconds; a
    # rolled-back test must not leave its sources to the next one.
    from telemetry.read.promql.reads import sources_cache_clear

    sources_cache_clear()
    yield
    sources_cache_clear()


@pytest.fixture(autouse=True)
def default_language_after_each_test():
    # LocaleMiddleware activates the reader's language for the request's thread and leaves
    # it there; the test client runs requests in the test's thread, so a zh-hans page would
    # otherwise decide the language of whatever the next test formats outside a request.
    from django.utils import translation

    yield
    translation.activate(settings.LANGUAGE_CODE)
