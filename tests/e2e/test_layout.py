"""In a real browser at 1400 px: action columns are not clipped (issue 24 part 8)."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.alerts.test_alerts_access import alert_of
from tests.conftest import PASSWORD

VISIBLE = """
const el = arguments[0];
// Scroll the page vertically only: a horizontal scroll of the card would hide the clipping.
window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - window.innerHeight / 2);
const r = el.getBoundingClientRect();
const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
return {right: r.right, width: window.innerWidth, hit: hit === el || el.contains(hit)};
"""


@pytest.mark.django_db(transaction=True)
def test_the_alert_actions_are_on_screen_and_clickable_at_1400_px(
    browser, login, users, tenants, live_server
):
    for i in range(3):
        alert = alert_of("acme")
        alert.message = "a very long message " * 20
        alert.save(update_fields=["message"])
        # An exporter key without break opportunities widens its column (real UUIDs do).
        alert.entity.key = f"GPU-{i}-" + "0123456789abcdef" * 6
        alert.entity.save(update_fields=["key"])
        alert.entity.workload.name = f"svc-{i}"
        alert.entity.workload.save(update_fields=["name"])
    browser.set_window_size(1400, 1000)
    login("op", PASSWORD)
    browser.get(f"{live_server.url}/alerts/")
    WebDriverWait(browser, 15).until(
        lambda b: b.find_elements(By.CSS_SELECTOR, "td.actions button")
    )
    for button in browser.find_elements(By.CSS_SELECTOR, "td.actions button"):
        seen = browser.execute_script(VISIBLE, button)
        assert seen["hit"] and seen["right"] <= seen["width"], seen
