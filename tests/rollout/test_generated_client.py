"""A Python client generated from the portal's OpenAPI document (openapi-python-client, as an
integrator would generate one) calls each plan command by its own method name: one method per
command, not one ``plans_create`` for ten commands."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

from accounts.services.tokens import token_create
from rollout.api.views import PLAN_COMMANDS
from rollout.models import AuditEntry
from rollout.services.audit import Actor
from rollout.services.transitions import plan_promote, plan_start
from tests.rollout.conftest import rev

PACKAGE = "cluster_portal_api_client"
GENERATOR = Path(sys.executable).parent / "openapi-python-client"


def _generate_client(where: Path) -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    (where / "schema.json").write_bytes(OpenApiJsonRenderer().render(schema))
    # The generator formats its output with ruff: the venv's own, on PATH.
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run(
        [str(GENERATOR), "generate", "--path", "schema.json", "--meta", "none", "--overwrite"],
        cwd=where, env=env, check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert (where / PACKAGE / "api" / "plans" / "plans_approve.py").exists()


@pytest.fixture
def generated_client(tmp_path):
    _generate_client(tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_generated_client_calls_each_plan_command_by_name(
    generated_client, live_server, plan_factory, users
):
    # One module (one method) per plan command, named after it.
    plans_dir = Path(generated_client.__file__).parent / "api" / "plans"
    for command in PLAN_COMMANDS:
        assert (plans_dir / f"plans_{command.replace('-', '_')}.py").exists(), command
    start = importlib.import_module(f"{PACKAGE}.api.plans.plans_start")
    approve = importlib.import_module(f"{PACKAGE}.api.plans.plans_approve")
    retrieve = importlib.import_module(f"{PACKAGE}.api.plans.plans_retrieve")
    models = importlib.import_module(f"{PACKAGE}.models")

    plan = plan_factory()
    plan_start(plan_id=plan.pk, actor=Actor(users["operator"]))
    plan_promote(plan_id=plan.pk, actor=Actor(users["operator"]))
    token = token_create(
        name="sdk",
        scopes=["read", "approve"],
        owner=users["approver"],
        created_by=users["approver"],
    ).plaintext
    client = generated_client.AuthenticatedClient(base_url=live_server.url, token=token)

    before = retrieve.sync(client=client, id=plan.pk)
    assert before.state == "awaiting_approval"

    answer = approve.sync_detailed(
        client=client, id=plan.pk, body=models.CommandRequest(revision=rev(plan), comment="sdk")
    )
    assert answer.status_code == 200, answer.content[:300]
    assert answer.parsed.state != "awaiting_approval"
    assert answer.parsed.current_phase == "gray"

    # A token never operates a plan: the start method reaches the start route, which refuses
    # it as a problem details 403 and audits the attempt as ``start_denied``.
    refused = start.sync_detailed(client=client, id=plan.pk, body=models.CommandRequest())
    assert refused.status_code == 403
    assert refused.headers["content-type"] == "application/problem+json"
    assert AuditEntry.objects.filter(plan=plan, action="start_denied").count() == 1
