"""Day-0 model add: a Hugging Face config.json uploaded by an operator becomes a twin model."""

from __future__ import annotations

import html
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from simulation.engine import MODELS
from simulation.models import CatalogModel, WhatIfRun
from simulation.services import whatif_run as whatif_service
from simulation.services.catalog import catalog_models_register
from tests.access import PageAccessCases

# Qwen2.5-7B-Instruct's published config.json (the fields the engine reads).
QWEN_7B = {
    "architectures": ["Qwen2ForCausalLM"],
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "vocab_size": 152064,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


class TestModelsPageAccess(PageAccessCases):
    url = "/whatif/models/"
    allowed_roles = ("operator",)


@pytest.fixture(autouse=True)
def _forget_day0_models():
    before = dict(MODELS)
    yield
    MODELS.clear()
    MODELS.update(before)


def _upload(config, model_id="qwen2.5-7b") -> dict:
    body = config if isinstance(config, bytes) else json.dumps(config).encode()
    return {"model_id": model_id, "config_file": SimpleUploadedFile("config.json", body)}


@pytest.mark.django_db
def test_an_operator_adds_a_model_and_a_whatif_run_serves_it(client_as, users):
    response = client_as("operator").post("/whatif/models/", _upload(QWEN_7B))
    assert response.status_code == 302
    row = CatalogModel.objects.get(model_id="qwen2.5-7b")
    # The parameter count is computed from the shapes: Qwen2.5-7B is 7.6B.
    assert row.spec["params"] == pytest.approx(7.6e9, rel=0.03)
    assert row.spec["attention"] == "gqa"
    page = client_as("operator").get("/whatif/models/").content.decode()
    assert "qwen2.5-7b" in page
    # Another process (a worker) learns it from the database before building a scenario.
    MODELS.pop("qwen2.5-7b")
    run = WhatIfRun.objects.create(
        cards=64,
        hardware="h100-sxm",
        hours=1,
        seed=3,
        serve_model="qwen2.5-7b",
        created_by=users["operator"],
    )
    run = whatif_service.whatif_execute(run_id=run.pk)
    assert run.status == "done", run.error
    assert run.result["scenario"]["serve_model"] == "qwen2.5-7b"
    assert run.result["summary"]["unified"]["tpot_p99_ms"] > 0
    scen = whatif_service.build_scenario(
        cards=64,
        hardware="h100-sxm",
        hours=1,
        seed=3,
        trace_kind="",
        trace_text="",
        serve_model="qwen2.5-7b",
    )
    assert {s.model for s in scen.services} == {"qwen2.5-7b"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "config,field",
    [
        ({k: v for k, v in QWEN_7B.items() if k != "hidden_size"}, "'hidden_size'"),
        ({**QWEN_7B, "num_key_value_heads": 5}, "'num_key_value_heads'"),
        ({**QWEN_7B, "num_local_experts": 8}, "'num_experts_per_tok'"),
        ({**QWEN_7B, "vocab_size": -1}, "'vocab_size'"),
    ],
)
def test_a_bad_config_is_refused_naming_the_field(client_as, config, field):
    response = client_as("operator").post("/whatif/models/", _upload(config))
    assert response.status_code == 400
    assert f"field {field}" in html.unescape(response.content.decode())
    assert not CatalogModel.objects.exists()


@pytest.mark.django_db
def test_a_builtin_id_or_non_json_file_is_refused(client_as):
    client = client_as("operator")
    response = client.post("/whatif/models/", _upload(QWEN_7B, model_id="llama-2-70b"))
    assert response.status_code == 400 and "built-in catalog model" in response.content.decode()
    response = client.post("/whatif/models/", _upload(b"{not json"))
    assert response.status_code == 400 and "is not JSON" in response.content.decode()
    assert not CatalogModel.objects.exists()
    assert MODELS["llama-2-70b"].source != "user config.json"


@pytest.mark.django_db
def test_registering_twice_is_idempotent(client_as):
    client_as("operator").post("/whatif/models/", _upload(QWEN_7B))
    assert catalog_models_register() == 1 and catalog_models_register() == 1
