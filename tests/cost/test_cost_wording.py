"""Assumed budget and migration cost never read as verdicts or quotable figures."""

from __future__ import annotations

import re

from cost.models import CostAssumptions
from tests.cost.test_cost_page import priced  # noqa: F401 (fixture)


def test_an_assumed_budget_gets_no_within_budget_verdict(priced, client_as):  # noqa: F811
    CostAssumptions.objects.update(migration_cost=None, budget=None)
    page = (
        client_as("operator")
        .get("/cost/", {"unified": priced["uni"].pk, "baseline": priced["legacy"].pk})
        .content.decode()
    )
    cell = re.search(r"<td data-budget-left[^>]*>", page).group(0)
    assert "bad" not in cell and "ok" not in cell
    assert "no verdict until you enter your own" in page
    assert "from the assumed migration cost" in page


def test_an_entered_budget_gets_its_verdict(priced, client_as):  # noqa: F811
    page = (
        client_as("operator")
        .get("/cost/", {"unified": priced["uni"].pk, "baseline": priced["legacy"].pk})
        .content.decode()
    )
    assert re.search(r'<td data-budget-left class="bad">', page)
    assert "no verdict until" not in page and "from the assumed migration cost" not in page
    assert "an extrapolation" in page
