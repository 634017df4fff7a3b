"""In a real browser: the plan page draws its migration timeline (asked, confirmed and served
lines, gate marks) under the CSP, without widening the page at 1400 px, and stays within a
phone's width."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import PASSWORD
from tests.e2e.test_csp import csp_violations
from tests.rollout.conftest import clusters, plan_factory, workloads  # noqa: F401 - fixtures
from tests.rollout.test_migration_timeline import moved_plan  # noqa: F401 - fixture

CHART = "#migration-timeline-chart"

DRAWN = """
const el = document.querySelector(arguments[0]);
if (!el || !el.querySelector('.main-svg') || !el.data) return null;
const kinds = el.data.map(t => t.meta);
const box = el.getBoundingClientRect();
return {
  kinds: kinds,
  lines: el.querySelectorAll('.scatterlayer .trace').length,
  left: box.left,
  right: box.right,
  viewport: document.documentElement.clientWidth,
  pageWidth: document.documentElement.scrollWidth,
  svgWidth: el.querySelector('.main-svg').getBoundingClientRect().width,
};
"""


def _drawn(browser) -> dict:
    return WebDriverWait(browser, 20).until(lambda b: b.execute_script(DRAWN, CHART))


@pytest.mark.django_db(transaction=True)
def test_the_plan_page_draws_the_timeline_without_csp_violations_or_overflow(
    browser,
    login,
    users,
    live_server,
    moved_plan,  # noqa: F811
):
    plan, _times = moved_plan
    browser.set_window_size(1400, 1000)
    login("op", PASSWORD)
    csp_violations(browser)  # drop what the login page logged (nothing expected either)
    browser.get(f"{live_server.url}/migrations/{plan.pk}/")

    seen = _drawn(browser)
    # acme-chat's three lines (and acme-batch's asked line), the three gate outcomes.
    assert seen["kinds"].count("confirmed") == 1
    assert seen["kinds"].count("served") == 1
    assert seen["kinds"].count("asked") == 2
    assert {"gate-pass", "gate-fail", "gate-inconclusive"} <= set(seen["kinds"])
    assert seen["lines"] == len(seen["kinds"])  # every trace drawn
    assert csp_violations(browser) == []
    assert seen["pageWidth"] <= seen["viewport"], seen
    assert seen["right"] <= seen["viewport"], seen
    # The chart's title lifted into a heading and the caption explaining the lines.
    title = browser.find_element(By.CSS_SELECTOR, "#migration-timeline .chart-title")
    assert title.text == "Migration timeline"
    caption = browser.find_element(By.ID, "migration-timeline-caption")
    assert "asked" in caption.text and "confirmed" in caption.text and "served" in caption.text

    browser.set_window_size(390, 844)
    browser.get(f"{live_server.url}/migrations/{plan.pk}/")
    phone = _drawn(browser)
    assert phone["left"] >= 0, phone
    assert phone["right"] <= phone["viewport"], phone
    assert phone["svgWidth"] <= phone["viewport"], phone
    assert csp_violations(browser) == []
