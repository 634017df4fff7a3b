"""Every API error is RFC 9457 problem details, whichever layer answered it; pages keep HTML."""

from __future__ import annotations

import pytest

PROBLEM = "application/problem+json"


def _assert_problem(response, status: int, code: str, path: str) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == PROBLEM
    body = response.json()
    assert body["type"] == "about:blank"
    assert body["status"] == status
    assert body["title"] and body["detail"]
    assert body["instance"] == path
    assert body["code"] == code
    return body


@pytest.mark.django_db
def test_a_validation_error_keeps_its_fields_as_an_extension_member(client_as):
    response = client_as("customer").get("/api/v1/plans/?state=nonsense")
    body = _assert_problem(response, 400, "invalid", "/api/v1/plans/")
    assert body["title"] == "Bad Request"
    assert "state" in body["errors"]


@pytest.mark.django_db
def test_an_unknown_api_url_is_a_problem_from_the_404_handler(client_as):
    _assert_problem(
        client_as("operator").get("/api/v1/no-such-thing/"), 404, "not_found",
        "/api/v1/no-such-thing/",
    )  # fmt: skip


@pytest.mark.django_db
def test_a_missing_object_is_a_problem_from_drf_s_handler(client_as):
    response = client_as("customer").get("/api/v1/plans/999999/")
    _assert_problem(response, 404, "not_found", "/api/v1/plans/999999/")


@pytest.mark.django_db
def test_anonymous_and_forbidden_answers_are_problems(client, client_as):
    anonymous = client.get("/api/v1/plans/")
    assert anonymous["Content-Type"] == PROBLEM
    assert anonymous.json()["status"] == anonymous.status_code
    _assert_problem(
        client_as("customer").get("/api/v1/status/processes/"), 403, "permission_denied",
        "/api/v1/status/processes/",
    )  # fmt: skip


@pytest.mark.django_db
def test_the_nul_guard_answers_a_problem(client_as):
    response = client_as("operator").get("/api/v1/plans/?state=a%00b")
    body = _assert_problem(response, 400, "invalid", "/api/v1/plans/")
    assert body["errors"]


@pytest.mark.django_db
def test_a_csv_request_s_error_is_a_problem_naming_the_field(client_as, cluster):
    url = "/api/v1/dashboards/hardware/"
    response = client_as("operator").get(url + "?format=csv&table=nope")
    body = _assert_problem(response, 400, "invalid", url)
    assert "racks" in body["detail"]


@pytest.mark.django_db
def test_success_answers_and_pages_are_untouched(client_as):
    ok = client_as("operator").get("/api/v1/plans/")
    assert ok.status_code == 200 and ok["Content-Type"].startswith("application/json")
    page = client_as("operator").get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


@pytest.mark.django_db
def test_the_schema_documents_errors_as_problem_details(client_as):
    schema = client_as("operator").get("/api/schema/?format=json").json()
    error = schema["components"]["schemas"]["Error"]
    assert {"type", "title", "status", "instance", "detail", "code", "errors"} <= set(
        error["properties"]
    )
    for operations in schema["paths"].values():
        for operation in operations.values():
            for code, answer in operation.get("responses", {}).items():
                if code[0] in "45" and answer.get("content"):
                    assert set(answer["content"]) == {PROBLEM}, (code, answer["content"])
