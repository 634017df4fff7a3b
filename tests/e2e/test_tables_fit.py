"""In a real browser at 1400 px, the portal's tables fit their cards (issue 34, item 8): no
page scrolls sideways and no table needs its card's horizontal scroll bar."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import PASSWORD
from tests.cost.test_cost_page import priced  # noqa: F401 - fixture used below
from tests.e2e.test_dashboards import twin_with_history

PAGES = (
    "/",
    "/dashboards/?cluster=twin-e2e&range=6h",
    "/dashboards/hardware/?cluster=twin-e2e",
    "/dashboards/memory/?cluster=twin-e2e",
    "/dashboards/network/?cluster=twin-e2e",
    "/workloads/?cluster=twin-e2e",
    "/cost/?cluster=twin-e2e",
    "/report/",
    "/alerts/",
    "/migrations/",
    "/twin/",
    "/whatif/",
    "/scheduler/",
    "/exporters/",
    "/status/",
)

# Every table whose content is wider than the box it sits in (its scrolling card or wrapper).
OVERFLOWING = """
const out = [];
if (document.documentElement.scrollWidth > window.innerWidth + 1) {
  out.push({page: true, width: document.documentElement.scrollWidth});
}
document.querySelectorAll("table").forEach((table) => {
  let box = table.parentElement;
  while (box && getComputedStyle(box).overflowX === "visible" && box !== document.body) {
    box = box.parentElement;
  }
  if (box && box.scrollWidth > box.clientWidth + 1) {
    const head = Array.from(table.querySelectorAll("th")).map((th) => th.textContent.trim());
    out.push({table: head.slice(0, 4).join(" | "), need: box.scrollWidth, have: box.clientWidth});
  }
});
return out;
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("priced")
def test_tables_fit_their_cards_at_1400_px(browser, login, users, tenants, live_server):
    twin_with_history(tenants)
    browser.set_window_size(1400, 1000)
    login("op", PASSWORD)
    found = {}
    for path in PAGES:
        browser.get(f"{live_server.url}{path}")
        WebDriverWait(browser, 15).until(lambda b: b.find_elements(By.CSS_SELECTOR, "main"))
        # Dashboards fill their tables from their data endpoint: wait until they are drawn.
        WebDriverWait(browser, 15).until(
            lambda b: b.execute_script(
                "const r = document.querySelector('[data-dashboard]');"
                "return !r || Number(r.dataset.loaded || 0) >= 1;"
            )
        )
        wide = browser.execute_script(OVERFLOWING)
        if wide:
            found[path] = wide
    assert found == {}, found
