"""Access checks for one what-if run (page and API): cluster planning, staff only."""

from __future__ import annotations

from simulation.models import WhatIfRun
from tests.access import ApiAccessCases, PageAccessCases


def finished_run() -> WhatIfRun:
    from accounts.models import User

    return WhatIfRun.objects.create(
        cards=64,
        hardware="h100-sxm",
        hours=1,
        seed=3,
        status="done",
        progress=1.0,
        result={},
        created_by=User.objects.get(username="op"),
    )


class TestWhatIfDetailPage(PageAccessCases):
    route = "whatif-detail"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        return f"/whatif/{finished_run().pk}/"


class TestWhatIfDetailApi(ApiAccessCases):
    route = "api-whatif-detail"
    allowed_roles = ("operator", "approver")

    def get_url(self, users) -> str:
        return f"/api/v1/whatif/{finished_run().pk}/"
