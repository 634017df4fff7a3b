"""The migration list: paginated, filtered by state, tenant, cluster and name; unknown
parameters and bad values are a 400 page naming them."""

from __future__ import annotations

import pytest

from rollout.models import MigrationPlan
from tests.rollout.conftest import plan_for_access

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_plans(users):
    return {"acme": plan_for_access("acme"), "panda": plan_for_access("panda")}


def names(response) -> list[str]:
    return [plan.name for plan in response.context["page"]]


def test_the_list_filters_by_tenant_cluster_and_name(client_as, two_plans):
    client = client_as("operator")
    assert sorted(names(client.get("/migrations/"))) == ["access-acme", "access-panda"]
    assert names(client.get("/migrations/?tenant=panda")) == ["access-panda"]
    assert names(client.get("/migrations/?cluster=acc-uni-acme")) == ["access-acme"]
    assert names(client.get("/migrations/?cluster=acc-old-panda")) == ["access-panda"]
    assert names(client.get("/migrations/?name=PANDA")) == ["access-panda"]
    assert names(client.get("/migrations/?state=running")) == []


def test_an_empty_filtered_list_says_that_nothing_matches(client_as, two_plans):
    body = client_as("operator").get("/migrations/?name=nothing-like-this").content.decode()
    assert "No migration plan matches these filters." in body


def test_an_unknown_parameter_is_a_400_page_naming_it(client_as, two_plans):
    response = client_as("operator").get("/migrations/?tenant_name=acme")
    assert response.status_code == 400
    assert "tenant_name" in response.content.decode()


def test_a_bad_value_is_a_400_page_naming_the_field(client_as, two_plans):
    response = client_as("operator").get("/migrations/?state=exploded")
    assert response.status_code == 400
    assert "state" in response.content.decode()


def test_a_customer_cannot_filter_for_another_tenant(client_as, two_plans):
    response = client_as("customer").get("/migrations/?tenant=panda")
    assert response.status_code == 400
    assert names(client_as("customer").get("/migrations/")) == ["access-acme"]


def test_the_list_is_paginated_keeping_its_filters(client_as, two_plans, monkeypatch):
    monkeypatch.setattr("rollout.views.PAGE_SIZE", 1)
    client = client_as("operator")
    first = client.get("/migrations/?name=access")
    assert len(names(first)) == 1
    assert first.context["page"].paginator.num_pages == 2
    assert "name=access&amp;page=2" in first.content.decode()
    second = client.get("/migrations/?name=access&page=2")
    assert set(names(first) + names(second)) == set(
        MigrationPlan.objects.values_list("name", flat=True)
    )
