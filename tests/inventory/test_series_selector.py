"""Operators bind a workload to exporter series by selector: API, page and admin share one
service; a bad selector is a 400 naming the problem and changes nothing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from inventory.models import Workload
from telemetry.catalogue.entities import workload_entity_ensure
from tests.access import ApiAccessCases, PageAccessCases
from tests.inventory.test_inventory_api_access import workload_of

GOOD = 'namespace="acme-bank", pod=~"llama-70b-.*"'


class TestWorkloadSelectorApi(ApiAccessCases):
    route = "api:workload-series-selector"
    method = "put"
    content_type = "application/json"
    allowed_roles = ("operator",)
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/api/v1/workloads/{workload_of('acme').pk}/series-selector/"

    def post_data(self, users) -> dict:
        return {"series_selector": GOOD}


class TestWorkloadSelectorPage(PageAccessCases):
    route = "workload-series-selector"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return reverse("workload-series-selector", args=[workload_of("acme").pk])

    def post_data(self, users) -> dict:
        return {"series_selector": GOOD}


@pytest.mark.django_db
def test_an_operator_sets_a_selector_through_the_api(client_as, users):
    workload = workload_of("acme")
    response = client_as("operator").put(
        f"/api/v1/workloads/{workload.pk}/series-selector/",
        {"series_selector": GOOD},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["series_selector"] == GOOD
    workload.refresh_from_db()
    assert workload.series_selector == GOOD


@pytest.mark.django_db
def test_a_bad_selector_is_a_400_naming_the_problem_and_nothing_changes(client_as, users):
    workload = workload_of("acme")
    Workload.objects.filter(pk=workload.pk).update(series_selector='pod="kept"')
    response = client_as("operator").put(
        f"/api/v1/workloads/{workload.pk}/series-selector/",
        {"series_selector": 'gpu="0"'},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "Unknown label 'gpu'" in response.content.decode()
    workload.refresh_from_db()
    assert workload.series_selector == 'pod="kept"'


@pytest.mark.django_db
def test_the_page_form_refuses_a_bad_selector_with_a_400_page(client_as, users):
    workload = workload_of("acme")
    response = client_as("operator").post(
        reverse("workload-series-selector", args=[workload.pk]), {"series_selector": 'pod=~"("'}
    )
    assert response.status_code == 400
    assert "regular expression for pod is invalid" in response.content.decode()
    workload.refresh_from_db()
    assert workload.series_selector == ""


@pytest.mark.django_db
def test_the_workload_page_shows_the_selector_and_the_form_only_to_operators(client_as, users):
    workload = workload_of("acme")
    workload_entity_ensure(workload)  # customers see workloads through their entity
    client_as("operator").post(
        reverse("workload-series-selector", args=[workload.pk]), {"series_selector": GOOD}
    )
    page = client_as("operator").get(reverse("workload-detail", args=[workload.pk]))
    assert "llama-70b-" in page.content.decode()
    assert 'name="series_selector"' in page.content.decode()
    customer = client_as("customer").get(reverse("workload-detail", args=[workload.pk]))
    assert customer.status_code == 200
    assert 'name="series_selector"' not in customer.content.decode()


@pytest.mark.django_db
def test_the_admin_refuses_a_bad_selector_and_saves_a_good_one(admin_client, users):
    workload = workload_of("acme")
    url = reverse("admin:inventory_workload_change", args=[workload.pk])
    form = {
        "tenant": workload.tenant_id,
        "cluster": workload.cluster_id,
        "name": workload.name,
        "kind": workload.kind,
        "criticality": workload.criticality,
        "cards_requested": 1,
        "series_selector": "not a selector",
    }
    refused = admin_client.post(url, form)
    assert refused.status_code == 200  # the form again, with the error
    assert "Cannot read a matcher" in refused.content.decode()
    workload.refresh_from_db()
    assert workload.series_selector == ""
    saved = admin_client.post(url, {**form, "series_selector": GOOD})
    assert saved.status_code == 302
    workload.refresh_from_db()
    assert workload.series_selector == GOOD
