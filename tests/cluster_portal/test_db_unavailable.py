"""A database connection lost mid-request answers a retryable 503 (it was a 500)."""

from __future__ import annotations

import psycopg
import pytest
from django.db import OperationalError, connection


def _kill_own_backend() -> None:
    """Terminate this test's own PostgreSQL session from a second connection, as a database
    restart or a pooler's idle timeout would."""
    pid = connection.connection.info.backend_pid
    settings = connection.settings_dict
    dsn = f"host={settings['HOST'] or '127.0.0.1'} port={settings['PORT'] or 5432} "
    dsn += f"user={settings['USER']} dbname={settings['NAME']}"
    with psycopg.connect(dsn, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


@pytest.mark.postgresql_only("kills a real PostgreSQL session")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("path", "json"), [("/api/v1/clusters/", True), ("/", False)])
def test_a_request_whose_database_connection_died_answers_503_with_retry_after(
    client_as, path, json
):
    client = client_as("operator")
    connection.ensure_connection()
    _kill_own_backend()
    try:
        response = client.get(path)
    finally:
        connection.close()  # the teardown's flush connects afresh
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    if json:
        assert response.json()["code"] == "database_unavailable"
    else:
        assert "Database unavailable" in response.content.decode()


@pytest.mark.django_db
def test_an_api_view_whose_query_fails_to_connect_is_a_503_on_any_database(client_as, monkeypatch):
    from inventory.api import views

    client = client_as("operator")

    def lost(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(views.ClusterListView, "get_queryset", lost, raising=False)
    response = client.get("/api/v1/clusters/")
    assert response.status_code == 503 and response["Retry-After"] == "5"
