"""Access checks for the twin's commands and API: cluster operations, not tenant data.

Operators create and control runs; approvers see them (API list) but may not act; customers
get 403 everywhere.
"""

from __future__ import annotations

from inventory.models import Cluster
from simulation.engine import default_scenario
from simulation.models import TwinRun
from simulation.services import twin_run_create
from tests.access import ApiAccessCases, PageAccessCases


def small_run() -> TwinRun:
    cluster = Cluster.objects.create(name="twin-access", kind=Cluster.Kind.UNIFIED)
    return twin_run_create(
        name="access", cluster=cluster, scenario=default_scenario(cards=64, seed=3)
    )


class TestTwinNewPage(PageAccessCases):
    """The create form posts here; an empty form is a 400 for operators (they got through)."""

    route = "twin-new"
    method = "post"
    url = "/twin/new/"
    allowed_roles = ("operator",)


class TestTwinActionPage(PageAccessCases):
    route = "twin-action"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return f"/twin/{small_run().pk}/pause/"


class TestTwinRunsApi(ApiAccessCases):
    url = "/api/v1/twin/runs/"
    allowed_roles = ("operator", "approver")


class TestTwinActionApi(ApiAccessCases):
    route = "api-twin-action"
    method = "post"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return f"/api/v1/twin/runs/{small_run().pk}/pause/"
