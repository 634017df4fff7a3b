"""In a real browser: the accelerator page's holder swimlane draws its bars under the CSP."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import PASSWORD
from tests.e2e.test_csp import csp_violations
from tests.scheduling.holdings import job, site, store

MEASURE = """
const el = document.querySelector('[data-swimlane]');
return {
  traces: el.data ? el.data.length : 0,
  expected: JSON.parse(document.getElementById('card-holders-figure').textContent).data.length,
  bars: el.querySelectorAll('.barlayer .point').length,
  page: document.documentElement.scrollWidth, viewport: document.documentElement.clientWidth,
};
"""


@pytest.mark.django_db(transaction=True)
def test_the_card_swimlane_draws_its_bars_without_csp_violations(
    browser, login, users, tenants, live_server
):
    s = site(tenants)
    now = timezone.now()
    store(s.source, [job(41, cards={"gpu-001": [0]}, start=now - timedelta(hours=3)),
                     job(42, account="tenant-b", state="COMPLETED", cards={"gpu-001": [0]},
                         start=now - timedelta(hours=9), end=now - timedelta(hours=4))], now)  # fmt: skip
    browser.set_window_size(1400, 1000)
    login("op", PASSWORD)
    csp_violations(browser)
    browser.get(f"{live_server.url}/dashboards/hardware/accelerators/{s.cards[('gpu-001', 0)].pk}/")
    WebDriverWait(browser, 15).until(
        lambda b: b.find_elements(By.CSS_SELECTOR, "[data-swimlane].js-plotly-plot .main-svg")
    )
    seen = browser.execute_script(MEASURE)
    assert seen["traces"] == seen["expected"] == 2, seen
    assert seen["bars"] == 2, seen
    assert seen["page"] <= seen["viewport"], seen
    assert csp_violations(browser) == []
