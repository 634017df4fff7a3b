"""Access checks for the inventory API: clusters and exporter targets (staff), workloads
(tenant-scoped: lists hold only the caller's tenant, another tenant's workload is a 404)."""

from __future__ import annotations

from inventory.models import Workload
from tests.access import ApiAccessCases

STAFF = ("operator", "approver")


class TestClusterListApi(ApiAccessCases):
    url = "/api/v1/clusters/"
    allowed_roles = STAFF


class TestExporterListApi(ApiAccessCases):
    url = "/api/v1/exporters/"
    allowed_roles = STAFF


class TestWorkloadListApi(ApiAccessCases):
    url = "/api/v1/workloads/"

    def list_markers(self, users, tenants) -> list[str]:
        workload_of("acme")
        return [workload_of("panda").name]


class TestWorkloadListFilteredByAnotherTenant(ApiAccessCases):
    """Naming the other tenant in the filter does not widen a customer's list."""

    url = "/api/v1/workloads/?tenant=panda"

    def list_markers(self, users, tenants) -> list[str]:
        return [workload_of("panda").name]


class TestWorkloadDetailApi(ApiAccessCases):
    route = "api:workload"
    hidden_roles = ("other_customer",)

    def get_url(self, users) -> str:
        return f"/api/v1/workloads/{workload_of('acme').pk}/"

    def other_tenant_url(self, users, tenants) -> str:
        return f"/api/v1/workloads/{workload_of('panda').pk}/"


def workload_of(tenant: str) -> Workload:
    from accounts.models import Tenant
    from inventory.models import Cluster

    cluster, _ = Cluster.objects.get_or_create(
        name="inventory-access", defaults={"kind": Cluster.Kind.UNIFIED}
    )
    return Workload.objects.create(
        tenant=Tenant.objects.get(slug=tenant),
        cluster=cluster,
        name=f"{tenant}-inference",
        kind=Workload.Kind.INFERENCE,
    )
