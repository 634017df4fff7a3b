"""In a real browser: chart titles sit above the plots (clear of Plotly's mode bar), a long
range says where the data begins, and the time axis can show the twin's simulated clock."""

from __future__ import annotations

import os

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import PASSWORD
from tests.e2e.test_dashboards import twin_with_history, wait_loaded

SHOTS = os.environ.get("E2E_SCREENSHOTS")  # a folder: save what the test saw, for review


@pytest.mark.django_db(transaction=True)
def test_overview_titles_clear_of_the_mode_bar_and_simulated_clock_axis(
    browser, login, users, tenants, live_server
):
    twin_with_history(tenants)
    login("op", PASSWORD)
    browser.get(f"{live_server.url}/dashboards/?cluster=twin-e2e&range=30d")
    wait_loaded(browser)
    titles = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "h3.chart-title")]
    assert "Utilization: allocated vs busy" in titles
    # Plotly draws no title of its own, so its mode bar has nothing to cover.
    assert not browser.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .gtitle")
    note = browser.find_element(By.CSS_SELECTOR, "[data-data-start]")
    assert note.is_displayed() and note.text.startswith("No data before")
    if SHOTS:
        browser.execute_script("document.querySelector('.chart-grid').scrollIntoView()")
        browser.save_screenshot(os.path.join(SHOTS, "overview-30d.png"))

    browser.get(f"{live_server.url}/dashboards/?cluster=twin-e2e&range=1h")
    wait_loaded(browser)
    toggle = browser.find_element(By.CSS_SELECTOR, "[data-time-axis]")
    assert toggle.is_displayed()
    toggle.click()
    WebDriverWait(browser, 15).until(
        lambda b: b.execute_script(
            "const el = document.querySelector('[data-chart-key=utilization]');"
            "return el && el.layout && el.layout.xaxis.ticktext && el.layout.xaxis.ticktext.length;"
        )
    )
    ticks = browser.execute_script(
        "return document.querySelector('[data-chart-key=utilization]').layout.xaxis.ticktext;"
    )
    assert all(len(t) == 5 and t[2] == ":" for t in ticks)
    if SHOTS:
        browser.execute_script("document.querySelector('.chart-grid').scrollIntoView()")
        browser.save_screenshot(os.path.join(SHOTS, "overview-simulated-axis.png"))
