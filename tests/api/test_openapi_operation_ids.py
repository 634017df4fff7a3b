"""Every API operation has its own OpenAPI operationId (issue 34).

One route serving many commands (``/plans/{id}/{command}/``) gave generated clients a single
``plans_create`` method for eleven commands; each command is now its own route and operation.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from drf_spectacular.generators import SchemaGenerator

HTTP_METHODS = {"get", "put", "post", "patch", "delete", "head", "options", "trace"}
#: Path parameters that name what to do rather than which object: one operation each instead.
GENERIC_PARAMETERS = re.compile(r"\{(command|action)\}")


@pytest.fixture(scope="module")
def operations() -> list[tuple[str, str, dict]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [
        (path, method, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in HTTP_METHODS
    ]


def test_every_operation_id_is_used_once(operations):
    counts = Counter(operation["operationId"] for _, _, operation in operations)
    shared = {
        operation_id: sorted(
            f"{m.upper()} {p}" for p, m, o in operations if o["operationId"] == operation_id
        )
        for operation_id, count in counts.items()
        if count > 1
    }
    assert not shared, f"operationIds shared by several operations: {shared}"


def test_no_path_keeps_a_generic_command_parameter(operations):
    generic = sorted({path for path, _, _ in operations if GENERIC_PARAMETERS.search(path)})
    assert not generic, f"one documented operation per command instead of: {generic}"


def test_each_command_is_its_own_named_operation(operations):
    ids = {(method, path): operation["operationId"] for path, method, operation in operations}
    assert ids[("post", "/api/v1/plans/{id}/start/")] == "plans_start"
    assert ids[("post", "/api/v1/plans/{id}/force-promote/")] == "plans_force_promote"
    assert ids[("post", "/api/v1/plans/{id}/override/")] == "plans_override"
    assert ids[("post", "/api/v1/alerts/{id}/acknowledge/")] == "alerts_acknowledge"
    assert ids[("post", "/api/v1/alerts/{id}/resolve/")] == "alerts_resolve"
    assert ids[("post", "/api/v1/twin/runs/{id}/speed/")] == "twin_runs_speed"
    assert ids[("post", "/api/v1/tokens/{id}/revoke/")] == "tokens_revoke"
    assert ids[("post", "/api/v1/tokens/{id}/rotate/")] == "tokens_rotate"
