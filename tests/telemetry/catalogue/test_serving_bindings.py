"""Operators bind serving endpoints to a workload: API, page and admin share one service; a
bad binding is a 400 naming the problem and writes nothing; tenants see only their own."""

from __future__ import annotations

import pytest
from django.urls import reverse

from inventory.models import Workload
from telemetry.catalogue.entities import workload_entity_ensure
from telemetry.models import ServingBinding
from tests.access import ApiAccessCases, PageAccessCases
from tests.inventory.test_inventory_api_access import workload_of


def _bound(tenant: str, model: str = "llama-3-8b", instance: str = "") -> ServingBinding:
    workload = Workload.objects.filter(name=f"{tenant}-inference").first() or workload_of(tenant)
    return ServingBinding.objects.create(workload=workload, model_name=model, instance=instance)


def _api(workload: Workload) -> str:
    return f"/api/v1/workloads/{workload.pk}/serving-bindings/"


class TestServingBindingListApi(ApiAccessCases):
    route = "api:workload-serving-bindings"
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return _api(_bound("acme").workload)

    def other_tenant_url(self, users, tenants) -> str:
        return _api(_bound("panda", model="panda-secret-model").workload)


class TestServingBindingCreateApi(ApiAccessCases):
    route = "api:workload-serving-bindings"
    method = "post"
    allowed_roles = ("operator",)
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return _api(workload_of("acme"))

    def post_data(self, users) -> dict:
        return {"model_name": "llama-3-8b", "instance": "10.0.0.5:8000"}


class TestServingBindingDetailApi(ApiAccessCases):
    route = "api:workload-serving-binding"
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        binding = _bound("acme")
        return f"{_api(binding.workload)}{binding.pk}/"

    def other_tenant_url(self, users, tenants) -> str:
        binding = _bound("panda")
        return f"{_api(binding.workload)}{binding.pk}/"


class TestServingBindingDeleteApi(ApiAccessCases):
    route = "api:workload-serving-binding"
    method = "delete"
    allowed_roles = ("operator",)
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        binding = _bound("acme")
        return f"{_api(binding.workload)}{binding.pk}/"


class TestServingBindingAddPage(PageAccessCases):
    route = "workload-serving-binding-add"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return reverse("workload-serving-binding-add", args=[workload_of("acme").pk])

    def post_data(self, users) -> dict:
        return {"model_name": "llama-3-8b", "instance": ""}


class TestServingBindingDeletePage(PageAccessCases):
    route = "workload-serving-binding-delete"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        binding = _bound("acme")
        return reverse("workload-serving-binding-delete", args=[binding.workload_id, binding.pk])


@pytest.mark.django_db
def test_an_operator_creates_lists_and_deletes_a_binding_through_the_api(client_as, users):
    workload = workload_of("acme")
    operator = client_as("operator")
    created = operator.post(
        _api(workload),
        {"model_name": "llama-3-8b", "instance": "acme/llama-0"},
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["key_prefix"] == "llama-3-8b@acme/llama-0"
    listed = client_as("customer").get(_api(workload)).json()
    assert [b["instance"] for b in listed] == ["acme/llama-0"]
    gone = client_as("operator").delete(f"{_api(workload)}{body['id']}/")
    assert gone.status_code == 204
    assert not ServingBinding.objects.filter(workload=workload).exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("payload", "field", "words"),
    [
        ({"model_name": "llama@8b"}, "model_name", "cannot contain '@'"),
        ({"model_name": ""}, "model_name", ""),
        ({"model_name": "m", "instance": "10.0.0.5 :8000"}, "instance", "blanks"),
        ({"model_name": "m", "instance": "a/b/c"}, "instance", "namespace/pod"),
    ],
)
def test_a_bad_binding_is_a_400_naming_the_field_and_writes_nothing(
    client_as, users, payload, field, words
):
    workload = workload_of("acme")
    response = client_as("operator").post(_api(workload), payload, content_type="application/json")
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]
    assert words in response.content.decode()
    assert not ServingBinding.objects.exists()


@pytest.mark.django_db
def test_the_same_binding_twice_is_a_400_and_keeps_one_row(client_as, users):
    binding = _bound("acme", instance="10.0.0.5:8000")
    response = client_as("operator").post(
        _api(binding.workload),
        {"model_name": binding.model_name, "instance": binding.instance},
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert ServingBinding.objects.count() == 1


@pytest.mark.django_db
def test_a_training_workload_cannot_be_bound_to_serving_endpoints(client_as, users):
    workload = workload_of("acme")
    Workload.objects.filter(pk=workload.pk).update(kind=Workload.Kind.TRAINING)
    response = client_as("operator").post(
        _api(workload), {"model_name": "llama-3-8b"}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "inference" in response.json()["errors"]["workload"][0]
    assert not ServingBinding.objects.exists()


@pytest.mark.django_db
def test_a_customer_cannot_delete_their_own_workloads_binding(client_as, users):
    binding = _bound("acme")
    response = client_as("customer").delete(f"{_api(binding.workload)}{binding.pk}/")
    assert response.status_code == 403
    assert ServingBinding.objects.filter(pk=binding.pk).exists()


@pytest.mark.django_db
def test_another_workloads_binding_is_a_404_under_this_workload(client_as, users):
    mine = workload_of("acme")
    other = _bound("panda")
    response = client_as("operator").delete(f"{_api(mine)}{other.pk}/")
    assert response.status_code == 404
    assert ServingBinding.objects.filter(pk=other.pk).exists()


@pytest.mark.django_db
def test_the_workload_page_lists_bindings_and_shows_forms_only_to_operators(client_as, users):
    workload = workload_of("acme")
    workload_entity_ensure(workload)  # customers see workloads through their entity
    operator = client_as("operator")
    added = operator.post(
        reverse("workload-serving-binding-add", args=[workload.pk]),
        {"model_name": "qwen-72b", "instance": "10.0.0.9:8000"},
    )
    assert added.status_code == 302
    page = operator.get(reverse("workload-detail", args=[workload.pk])).content.decode()
    assert "qwen-72b@10.0.0.9:8000" in page
    assert 'name="model_name"' in page
    customer = client_as("customer").get(reverse("workload-detail", args=[workload.pk]))
    assert "qwen-72b@10.0.0.9:8000" in customer.content.decode()
    assert 'name="model_name"' not in customer.content.decode()
    binding = ServingBinding.objects.get(workload=workload)
    client_as("operator").post(
        reverse("workload-serving-binding-delete", args=[workload.pk, binding.pk])
    )
    assert not ServingBinding.objects.exists()


@pytest.mark.django_db
def test_the_page_form_refuses_a_bad_binding_with_a_400_page(client_as, users):
    workload = workload_of("acme")
    response = client_as("operator").post(
        reverse("workload-serving-binding-add", args=[workload.pk]),
        {"model_name": "llama@8b", "instance": ""},
    )
    assert response.status_code == 400
    assert "cannot contain" in response.content.decode()
    assert not ServingBinding.objects.exists()


@pytest.mark.django_db
def test_the_admin_refuses_a_bad_binding_and_saves_a_good_one(admin_client, users):
    workload = workload_of("acme")
    url = reverse("admin:telemetry_servingbinding_add")
    refused = admin_client.post(url, {"workload": workload.pk, "model_name": "a@b"})
    assert refused.status_code == 200  # the form again, with the error
    assert "cannot contain" in refused.content.decode()
    assert not ServingBinding.objects.exists()
    saved = admin_client.post(url, {"workload": workload.pk, "model_name": "llama-3-8b"})
    assert saved.status_code == 302
    assert ServingBinding.objects.get().key_prefix == "llama-3-8b@"
