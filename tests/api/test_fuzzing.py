"""Property-based fuzzing of the whole REST API from its own OpenAPI schema (schemathesis 4).

Every operation is called with generated requests, valid and invalid, authenticated as an
operator-level integration token and as a customer's (tenant acme) token, against a small
world holding both tenants' workloads, plans and alerts. Checks: no 5xx, every status code,
content type, header and body as the schema says, and a customer's answers never carry the
other tenant's identifiers. Examples per operation are bounded (``FUZZ_EXAMPLES``, default 8)
so the suite stays within CI's budget; raise it locally for a deeper run.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.dashboards.dashboards_fixtures import make_twin_cluster
from tests.people import make_tenants, make_users

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))
#: Every identifier of the other tenant the world holds contains this word.
OTHER_TENANT_MARK = "panda"

schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
schema.app = get_wsgi_application()


@schemathesis.serializer("application/x-protobuf")
def protobuf_bytes(ctx, value) -> bytes:
    """Remote-write bodies are binary: send what was generated as bytes (invalid ones must be
    a 4xx, never a 5xx)."""
    return value if isinstance(value, bytes) else str(value).encode()


@schemathesis.check
def no_other_tenant_identifiers(ctx, response, case) -> None:
    """A customer's answer never names the other tenant (slug, name, users, workloads, plans)."""
    if case.headers is None or case.headers.get("X-Fuzz-Role") != "customer":
        return
    sent = f"{case.formatted_path}{case.query}{case.body}".lower()
    if OTHER_TENANT_MARK in sent:
        return  # the request itself named it (an error may echo the input)
    text = response.text.lower()
    assert OTHER_TENANT_MARK not in text, (
        f"{case.method} {case.formatted_path} answered another tenant's identifier: "
        f"...{text[max(0, text.find(OTHER_TENANT_MARK) - 80) :][:200]}..."
    )


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    no_other_tenant_identifiers,
]


def _build_world() -> dict:
    """Both tenants own a workload, a plan and an alert; the twin cluster has telemetry."""
    from accounts.services.tokens import token_create
    from alerts.models import Alert, AlertRule
    from inventory.models import Cluster, Workload
    from rollout.models import PhaseKind
    from rollout.services.audit import Actor
    from rollout.services.plans import plan_create
    from telemetry.models import Entity

    tenants = make_tenants()
    users = make_users(tenants)
    twin_cluster = make_twin_cluster(tenants)
    legacy = Cluster.objects.create(name="legacy-fuzz", kind=Cluster.Kind.LEGACY)
    rule = AlertRule.objects.order_by("name").first()
    now = timezone.now()
    for slug in ("acme", "panda"):
        tenant = tenants[slug]
        source = Workload.objects.create(
            tenant=tenant, cluster=legacy, name=f"{slug}-svc", kind="inference"
        )
        entity = Entity.objects.create(
            cluster=legacy, kind="workload", key=source.name, workload=source, tenant=tenant
        )
        plan_create(
            tenant=tenant,
            name=f"{slug}-move",
            source_cluster=legacy,
            target_cluster=twin_cluster,
            workloads={PhaseKind.PILOT: [source]},
            actor=Actor(users["operator"]),
        )
        Alert.objects.create(
            rule=rule,
            entity=entity,
            tenant=tenant,
            severity=rule.severity,
            value=1.0,
            message=f"{slug}-svc is slow",
            first_seen=now - timedelta(minutes=5),
            last_seen=now,
        )
    operator = token_create(name="fuzz-operator", scopes=["read", "ingest", "approve"])
    customer = token_create(name="fuzz-customer", scopes=["read"], tenant=tenants["acme"])
    return {
        "operator": {"Authorization": f"Bearer {operator.plaintext}", "X-Fuzz-Role": "operator"},
        "customer": {"Authorization": f"Bearer {customer.plaintext}", "X-Fuzz-Role": "customer"},
    }


@pytest.fixture(scope="module")
def fuzz_world(django_db_setup, django_db_blocker):
    """The world is built once per module inside an outer transaction that is rolled back at
    the end; each test (one per operation and role) runs in its own savepoint inside it, as
    pytest-django's ``db`` does, so what one test's requests change is undone before the next.
    Building it per test (a twin tick) was most of this module's time. Its telemetry ages by
    the module's run time (minutes), which stays inside the API's default windows."""
    from django.db import transaction

    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield _build_world()
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def world(fuzz_world, db) -> dict:
    return fuzz_world


@pytest.fixture(autouse=True)
def keep_the_test_connection():
    """The WSGI handler closes DB connections after each request (as in production); inside a
    test that would close the test's transaction, so do what Django's test client does."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _fuzz(case, headers: dict) -> None:
    case.call_and_validate(headers=headers, checks=CHECKS)


FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate],
    derandomize=True,
)


@pytest.mark.django_db
@schema.parametrize()
@FUZZ_SETTINGS
def test_operator_requests_get_no_server_error_and_match_the_schema(case, world):
    _fuzz(case, world["operator"])


@pytest.mark.django_db
@schema.parametrize()
@FUZZ_SETTINGS
def test_customer_requests_match_the_schema_and_never_show_the_other_tenant(case, world):
    _fuzz(case, world["customer"])


# --- hostile inputs the schema-driven generator rarely produces (issue 15 §7) ----------------
# Strings with NUL, C0/C1 controls and bidirectional overrides, overlong keys, numbers that
# overflow a double or an int conversion, non-finite numbers and deeply nested JSON, sent to
# the ingestion and read endpoints as both roles: always a 4xx in the JSON error body.

HOSTILE_CHARS = st.sampled_from(
    ["\x00", "\x01", "\x1b", "\x7f", "\x85", "\u202e", "\u2066", "\ufeff"]
)
hostile_text = st.one_of(
    st.builds(lambda a, c, b: a + c + b, st.text(max_size=8), HOSTILE_CHARS, st.text(max_size=8)),
    st.text(min_size=301, max_size=400),
)
huge_number = st.one_of(
    st.sampled_from(["1e999", "-1e999", "9" * 5000, "NaN", "Infinity", "1e20", "-0"]),
    st.integers(min_value=10**20, max_value=10**40).map(str),
)


def _deep(depth: int) -> str:
    return '{"samples": ' + "[" * depth + "]" * depth + "}"


def _json_body(field: str, raw_value: str) -> str:
    row = {
        "metric": "accelerator_utilization_ratio",
        "cluster": "twin-dash",
        "entity_kind": "accelerator",
        "entity": "n0/0",
        "ts": 1_780_000_000,
        "value": 0.5,
    }
    import json as _json

    text = _json.dumps({"samples": [row]})
    return text.replace(_json.dumps({field: row[field]})[1:-1], f'"{field}": {raw_value}')


def _assert_clean_4xx(response) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    assert response["Content-Type"] == "application/problem+json"
    assert "detail" in response.json()


@pytest.mark.django_db
@settings(
    max_examples=EXAMPLES * 4,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
@given(
    role=st.sampled_from(["operator", "customer"]),
    field=st.sampled_from(["metric", "cluster", "entity_kind", "entity"]),
    text=hostile_text,
    number=huge_number,
    where=st.sampled_from(["ts", "value"]),
    depth=st.integers(min_value=17, max_value=3000),
    param=st.sampled_from(["start", "end", "metric", "entity", "cluster", "kind"]),
)
def test_hostile_strings_numbers_and_nesting_are_4xx_never_5xx(
    world, role, field, text, number, where, depth, param
):
    import json as _json

    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=world[role]["Authorization"])
    url = "/api/v1/telemetry/samples/"
    body = _json.dumps({"samples": [{field: text, "ts": 1_780_000_000, "value": 1}]})
    _assert_clean_4xx(client.post(url, body, content_type="application/json"))
    _assert_clean_4xx(client.post(url, _json_body(where, number), content_type="application/json"))
    _assert_clean_4xx(client.post(url, _deep(depth), content_type="application/json"))
    prom = f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",Hostname={_json.dumps(text)}}} 1 {number}'
    _assert_clean_4xx(
        client.post(
            "/api/v1/telemetry/prometheus/?cluster=twin-dash",
            prom.encode(),
            content_type="text/plain",
        )
    )
    value = text if param not in ("start", "end") else number
    series = client.get(
        "/api/v1/telemetry/series/",
        {"metric": "accelerator_utilization_ratio", "entity": "n0/0", param: value},
    )
    _assert_clean_4xx(series)
