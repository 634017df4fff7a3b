"""Private, killable servers for the fault-tolerance tests.

The shared PostgreSQL (5432) and Redis (6379) are never stopped: every test that takes a server
away starts its own (``tests/servers.py``) and skips only when the binaries are missing.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.servers import ROOT, PostgresCluster, RedisServer, postgres_bindir, redis_binary


@pytest.fixture
def private_redis():
    if redis_binary() is None:
        pytest.skip("redis-server is not installed; this test kills and restarts its own Redis")
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def portal_on_private_redis(settings, private_redis) -> RedisServer:
    """This process's broker, readiness check and Django cache all point at ``private_redis``."""
    settings.CELERY_BROKER_URL = private_redis.url
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    settings.BROKER_DESCRIPTION = f"redis broker at 127.0.0.1:{private_redis.port}"
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": private_redis.url,
            "KEY_PREFIX": "portal",
        }
    }
    return private_redis


@pytest.fixture(scope="module")
def private_postgres():
    """A private PostgreSQL cluster holding a migrated portal database ``portal``."""
    if postgres_bindir() is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    cluster = PostgresCluster().start()
    try:
        cluster.database_url = cluster.create_database("portal")
        manage(cluster.database_url, "migrate", "--noinput")
        yield cluster
    finally:
        cluster.remove()


def manage(database_url: str, *args: str, timeout: float = 120) -> str:
    """Run ``manage.py`` in a subprocess against ``database_url``; returns its stdout."""
    env = {**os.environ, "DATABASE_URL": database_url}
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout
