"""Dashboard pages: access, tenant scoping, the range picker and the customer home page."""

# ruff: noqa: F811 (pytest fixtures imported from dashboards_fixtures are used as arguments)
from __future__ import annotations

import pytest

from inventory.models import Accelerator, Node, Rack, Workload
from tests.access import ALL_ROLES, PageAccessCases
from tests.dashboards.dashboards_fixtures import (  # noqa: F401
    WithInventory,
    tenant_workload,
    twin_cluster,
)

STAFF = ("operator", "approver")


class TestOverviewPage(WithInventory, PageAccessCases):
    url = "/dashboards/"
    allowed_roles = STAFF


class TestHardwarePage(WithInventory, PageAccessCases):
    url = "/dashboards/hardware/"
    allowed_roles = STAFF


class TestMemoryPage(WithInventory, PageAccessCases):
    url = "/dashboards/memory/"
    allowed_roles = STAFF


class TestNetworkPage(WithInventory, PageAccessCases):
    url = "/dashboards/network/"
    allowed_roles = STAFF


class TestRackPage(WithInventory, PageAccessCases):
    route = "dashboard-rack"
    allowed_roles = STAFF

    def get_url(self, users) -> str:
        return f"/dashboards/hardware/racks/{Rack.objects.get().pk}/"


class TestNodePage(WithInventory, PageAccessCases):
    route = "dashboard-node"
    allowed_roles = STAFF

    def get_url(self, users) -> str:
        return f"/dashboards/hardware/nodes/{Node.objects.get().pk}/"


class TestAcceleratorPage(WithInventory, PageAccessCases):
    route = "dashboard-accelerator"
    allowed_roles = STAFF

    def get_url(self, users) -> str:
        return f"/dashboards/hardware/accelerators/{Accelerator.objects.get().pk}/"


class TestWorkloadListPage(WithInventory, PageAccessCases):
    url = "/workloads/"
    allowed_roles = ALL_ROLES

    def list_markers(self, users, tenants) -> list[str]:
        return ["panda-asr"]


class TestWorkloadDetailPage(WithInventory, PageAccessCases):
    """Acme's workload; panda's customer gets 404 (not a 403 that confirms it exists)."""

    route = "workload-detail"
    allowed_roles = ("operator", "approver", "customer")
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/workloads/{Workload.objects.get(name='acme-chat').pk}/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/workloads/{Workload.objects.get(name='panda-asr').pk}/"


@pytest.mark.django_db
def test_the_overview_page_wires_charts_range_picker_and_scripts(client_as, twin_cluster):
    html = client_as("operator").get("/dashboards/?range=24h").content.decode()
    assert 'data-url="/api/v1/dashboards/overview/"' in html
    assert 'data-chart-key="utilization"' in html and 'data-chart-key="cards"' in html
    assert 'data-range="24h" aria-current="true"' in html
    assert "/static/plotly/plotly.min.js" in html and "/static/js/dashboard.js" in html
    assert "<script>" not in html  # no inline scripts (CSP)
    assert "digital twin" in html


@pytest.mark.django_db
def test_a_bad_range_is_a_400_page_naming_the_parameter(client_as, cluster):
    response = client_as("operator").get("/dashboards/hardware/?range=2w")
    assert response.status_code == 400
    assert b"<code>range</code>" in response.content


@pytest.mark.django_db
def test_customer_workload_list_and_detail_are_tenant_scoped(client_as, twin_cluster):
    mine, theirs = tenant_workload("acme"), tenant_workload("panda")
    client = client_as("customer")
    html = client.get("/workloads/").content.decode()
    assert mine.name in html and theirs.name not in html
    assert html.count("data-workload-id=") == 1
    assert client.get(f"/workloads/{mine.pk}/").status_code == 200
    assert client.get(f"/workloads/{theirs.pk}/").status_code == 404
    staff_html = client_as("operator").get("/workloads/?state=all").content.decode()
    assert staff_html.count("data-workload-id=") == min(Workload.objects.count(), 50)


@pytest.mark.django_db
def test_customer_home_shows_their_workloads_with_slo_attainment(client_as, twin_cluster):
    mine, theirs = tenant_workload("acme"), tenant_workload("panda")
    html = client_as("customer").get("/").content.decode()
    assert f"/workloads/{mine.pk}/" in html and theirs.name not in html
    assert "SLO attainment" in html and "%" in html


@pytest.mark.django_db
def test_navigation_links_the_dashboards(client_as, twin_cluster):
    nav = client_as("operator").get("/").content.decode()
    for url in (
        "/dashboards/",
        "/dashboards/hardware/",
        "/dashboards/memory/",
        "/dashboards/network/",
        "/workloads/",
    ):
        assert f'href="{url}"' in nav
