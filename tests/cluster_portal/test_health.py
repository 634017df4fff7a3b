"""/healthz says the process is alive; /readyz checks the database and the broker."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_healthz_answers_ok_without_login(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_is_ok_when_database_and_broker_answer(client):
    response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["components"]["database"]["ok"] is True
    assert body["components"]["broker"]["ok"] is True


@pytest.mark.django_db
def test_readyz_answers_503_naming_the_broker_when_it_is_unreachable(client, settings):
    # Port 1 on loopback refuses connections: a broker that is down.
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 503
    assert body["failing"] == ["broker"]
    assert body["components"]["database"]["ok"] is True
    assert body["components"]["broker"]["ok"] is False


def test_favicon_ico_is_the_portals_icon_not_a_404(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml"
    assert response.content.startswith(b"<svg") and "max-age" in response["Cache-Control"]
