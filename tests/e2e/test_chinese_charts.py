"""In a real browser, in Chinese: Plotly's date ticks, mode bar and the "Last updated" line."""

from __future__ import annotations

import pytest
from django.conf import settings
from selenium.webdriver.common.by import By

from tests.conftest import PASSWORD
from tests.e2e.test_dashboards import twin_with_history, wait_loaded

TICKS = """
return Array.from(document.querySelectorAll("[data-chart-key='utilization'] .xtick text"))
  .map(t => t.textContent);
"""
ENGLISH_MONTHS = (
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Oct",
    "Nov",
    "Dec",
)


@pytest.mark.django_db(transaction=True)
def test_a_chinese_readers_charts_date_ticks_and_update_time_are_chinese(
    browser, login, users, tenants, live_server
):
    twin_with_history(tenants)
    login("op", PASSWORD)
    browser.add_cookie({"name": settings.LANGUAGE_COOKIE_NAME, "value": "zh-hans"})
    browser.get(f"{live_server.url}/dashboards/?cluster=twin-e2e&range=6h")
    wait_loaded(browser)
    ticks = browser.execute_script(TICKS)
    assert ticks, "the utilization chart has x ticks"
    # The day under the first time tick reads "11月30日", never "Nov 30".
    assert any("月" in tick and "日" in tick for tick in ticks), ticks
    assert not any(month in tick for tick in ticks for month in ENGLISH_MONTHS), ticks
    updated = browser.find_element(By.CSS_SELECTOR, "[data-updated]").text
    assert "年" in updated and "月" in updated, updated
    titles = browser.execute_script(
        "return Array.from(document.querySelectorAll('.modebar-btn'))"
        ".map(b => b.getAttribute('data-title'));"
    )
    assert "自动缩放" in titles or "重置坐标轴" in titles, titles
    # The locale module loads under the CSP and throws nothing (a missing favicon is no error).
    log = browser.get_log("browser")
    assert [e for e in log if e["level"] == "SEVERE" and e.get("source") != "network"] == []
