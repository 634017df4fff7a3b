"""In a real browser: the network page's fabric graph draws under the CSP, fits at 1400 px
and at a phone's width."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import PASSWORD
from tests.dashboards.test_fabric_graph import _fabric
from tests.e2e.test_csp import csp_violations

URL = "/dashboards/network/?cluster=fab"

MEASURE = """
const el = document.querySelector('[data-fabric]');
const r = el.getBoundingClientRect();
return {
  chart: r.width, right: r.right, viewport: document.documentElement.clientWidth,
  page: document.documentElement.scrollWidth, traces: el.data ? el.data.length : 0,
  expected: JSON.parse(document.getElementById('fabric-figure').textContent).data.length,
};
"""


def wait_for_the_fabric(browser) -> None:
    WebDriverWait(browser, 15).until(
        lambda b: b.find_elements(By.CSS_SELECTOR, "[data-fabric].js-plotly-plot .main-svg")
    )


@pytest.mark.django_db(transaction=True)
def test_the_fabric_graph_draws_without_csp_violations_and_fits_a_desktop_and_a_phone(
    browser, login, users, live_server
):
    _fabric()
    browser.set_window_size(1400, 1000)
    login("op", PASSWORD)
    csp_violations(browser)  # drop whatever the login page logged
    browser.get(f"{live_server.url}{URL}")
    wait_for_the_fabric(browser)
    seen = browser.execute_script(MEASURE)
    assert seen["traces"] == seen["expected"] > 0, seen
    assert seen["page"] <= seen["viewport"], seen  # no horizontal scroll at 1400 px
    assert seen["chart"] > 600, seen  # and the graph uses the room it has
    assert csp_violations(browser) == []

    browser.set_window_size(390, 844)
    browser.get(f"{live_server.url}{URL}")
    wait_for_the_fabric(browser)
    phone = browser.execute_script(MEASURE)
    assert phone["chart"] <= phone["viewport"] and phone["right"] <= phone["viewport"], phone
    svg = browser.find_element(By.CSS_SELECTOR, "[data-fabric] .main-svg")
    assert svg.size["width"] <= phone["viewport"], (svg.size, phone)
    assert csp_violations(browser) == []
