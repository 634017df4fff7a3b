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
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.dashboards.dashboards_fixtures import twin_cluster  # noqa: F401 (fixture)

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


@pytest.fixture
def world(twin_cluster, users, tenants):  # noqa: F811
    """Both tenants own a workload, a plan and an alert; the twin cluster has telemetry."""
    from accounts.services.tokens import token_create
    from alerts.models import Alert, AlertRule
    from inventory.models import Cluster, Workload
    from rollout.models import PhaseKind
    from rollout.services.audit import Actor
    from rollout.services.plans import plan_create
    from telemetry.models import Entity

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
