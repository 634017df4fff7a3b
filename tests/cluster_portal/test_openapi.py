"""The OpenAPI description, the docs page and the shape every API error shares."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_the_schema_describes_every_api_route_with_token_auth(client_as):
    response = client_as("customer").get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    for path in ("/api/v1/plans/{id}/start/", "/api/v1/telemetry/samples/",
                 "/api/v1/dashboards/overview/", "/api/v1/tokens/", "/api/v1/workloads/"):  # fmt: skip
        assert path in schema["paths"], path
    assert schema["components"]["securitySchemes"]["integrationToken"]["scheme"] == "bearer"
    errors = schema["paths"]["/api/v1/alerts/"]["get"]["responses"]
    assert {"400", "401", "403", "404", "429"} <= set(errors)


@pytest.mark.django_db
def test_the_schema_and_docs_need_a_login(client, client_as):
    assert client.get("/api/schema/").status_code in (401, 403)
    docs = client_as("operator").get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()
    # Swagger UI comes from the sidecar package, never from a CDN.
    assert b"cdn.jsdelivr" not in docs.content and b"unpkg" not in docs.content


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "status", "code"),
    [
        ("/api/v1/plans/?state=nonsense", 400, "invalid"),
        ("/api/v1/plans/999999/", 404, "not_found"),
        ("/api/v1/plans/not-a-number/", 404, "not_found"),
        ("/api/v1/status/processes/", 403, "permission_denied"),
    ],
)
def test_every_error_has_detail_and_code(client_as, url, status, code):
    response = client_as("customer").get(url)
    body = response.json()
    assert response.status_code == status and body["code"] == code and body["detail"]
    if status == 400:
        assert "state" in body["errors"]


@pytest.mark.django_db
def test_anonymous_api_requests_get_the_error_body(client):
    response = client.get("/api/v1/plans/")
    assert response.status_code in (401, 403)
    assert response.json()["code"] in ("not_authenticated", "permission_denied")
