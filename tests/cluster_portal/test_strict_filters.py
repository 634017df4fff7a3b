"""Every list API answers an unknown query parameter with a 400 naming it (issue 24 part 8:
``/api/v1/workloads/?name=`` was silently ignored, so a misspelt filter listed every row)."""

from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.mixins import ListModelMixin

from tests.access import ApiAccessCases

# Parameters some lists require before they look at filters.
REQUIRED = {"/api/v1/accelerators/": {"cluster": "c1"}}


def list_endpoints(resolver: URLResolver | None = None, prefix: str = ""):
    """Every parameterless route under /api/ whose view is a DRF list."""
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        pattern = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from list_endpoints(entry, pattern)
        elif isinstance(entry, URLPattern):
            view = getattr(entry.callback, "view_class", None) or getattr(
                entry.callback, "cls", None
            )
            if (
                pattern.startswith("api/")
                and "<" not in pattern
                and view is not None
                and issubclass(view, ListModelMixin)
            ):
                yield "/" + pattern


LISTS = sorted(set(list_endpoints()))


def test_the_walk_finds_the_lists_the_issue_names():
    assert {"/api/v1/workloads/", "/api/v1/plans/", "/api/v1/alerts/"} <= set(LISTS)
    assert len(LISTS) >= 10


@pytest.mark.django_db
@pytest.mark.parametrize("url", LISTS)
def test_every_list_refuses_an_unknown_query_parameter_naming_it(client_as, url):
    from inventory.models import Cluster

    Cluster.objects.create(name="c1", kind=Cluster.Kind.UNIFIED)
    response = client_as("operator").get(url, {**REQUIRED.get(url, {}), "nmae": "train-0204"})
    assert response.status_code == 400, (url, response.status_code)
    body = response.json()
    assert body["code"] == "invalid"
    assert list(body["errors"]) == ["nmae"]
    assert "nmae" in body["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("url", LISTS)
def test_every_list_still_answers_its_pagination_and_format_parameters(client_as, url):
    from inventory.models import Cluster

    Cluster.objects.create(name="c1", kind=Cluster.Kind.UNIFIED)
    response = client_as("operator").get(
        url, {**REQUIRED.get(url, {}), "page": 1, "page_size": 5, "format": "json"}
    )
    assert response.status_code == 200, (url, response.content[:300])


class TestWorkloadNameFilter(ApiAccessCases):
    url = "/api/v1/workloads/?name=0204"
    route = "api:workloads"

    def list_markers(self, users, tenants):
        from inventory.models import Cluster, Workload

        cluster = Cluster.objects.create(name="legacy", kind=Cluster.Kind.SPLIT)
        Workload.objects.create(tenant=tenants["panda"], cluster=cluster, name="train-0204x",
                                kind="training")  # fmt: skip
        return ["train-0204x"]


@pytest.mark.django_db
def test_the_workload_api_filters_by_name(client_as, tenants):
    from inventory.models import Cluster, Workload

    cluster = Cluster.objects.create(name="legacy", kind=Cluster.Kind.SPLIT)
    for name in ("train-0204", "train-0210", "serve-chat"):
        Workload.objects.create(tenant=tenants["acme"], cluster=cluster, name=name,
                                kind="training")  # fmt: skip
    body = client_as("operator").get("/api/v1/workloads/", {"name": "TRAIN-02"}).json()
    assert sorted(row["name"] for row in body["results"]) == ["train-0204", "train-0210"]
    body = client_as("operator").get("/api/v1/workloads/", {"name": "0204"}).json()
    assert [row["name"] for row in body["results"]] == ["train-0204"]
