"""In a real browser, the pages with Plotly charts render under the Content-Security-Policy.

Chromium logs every blocked script, style, image or connection as a console error naming the
Content Security Policy; the test reads the browser log after each page has drawn its charts
and requires that there is none.
"""

from __future__ import annotations

import logging
import re

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import PASSWORD
from tests.cost.test_cost_page import priced  # noqa: F401 - fixture used below
from tests.e2e.test_dashboards import twin_with_history, wait_loaded

DASHBOARDS = (
    "/dashboards/?cluster=twin-e2e&range=6h",
    "/dashboards/hardware/?cluster=twin-e2e",
    "/dashboards/memory/?cluster=twin-e2e",
    "/dashboards/network/?cluster=twin-e2e",
)


def csp_violations(browser) -> list[str]:
    return [
        entry["message"]
        for entry in browser.get_log("browser")
        if "Content Security Policy" in entry["message"]
        or "Content-Security-Policy" in entry["message"]
    ]


def wait_for_a_drawn_chart(browser) -> None:
    """A Plotly chart has drawn its SVG."""
    WebDriverWait(browser, 15).until(
        lambda b: b.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .main-svg")
    )


def plotly_css_applied(browser) -> bool:
    # Plotly's own style rules position its SVG layers absolutely; without them (a blocked
    # stylesheet) the layers stack statically and the chart falls apart.
    return browser.execute_script(
        "const svg = document.querySelector('.js-plotly-plot .main-svg');"
        "return svg ? getComputedStyle(svg).position === 'absolute' : null;"
    )


@pytest.mark.django_db(transaction=True)
def test_dashboards_and_cost_page_draw_charts_without_csp_violations(
    browser,
    login,
    users,
    tenants,
    live_server,
    priced,  # noqa: F811
):
    twin_with_history(tenants)
    login("op", PASSWORD)
    csp_violations(browser)  # drop whatever the login page logged (nothing expected either)
    for path in DASHBOARDS:
        browser.get(f"{live_server.url}{path}")
        wait_loaded(browser)
        wait_for_a_drawn_chart(browser)
        assert plotly_css_applied(browser) is True, path
        assert csp_violations(browser) == [], path

    browser.get(f"{live_server.url}/cost/")
    wait_for_a_drawn_chart(browser)
    assert plotly_css_applied(browser) is True
    assert csp_violations(browser) == []


@pytest.mark.django_db(transaction=True)
def test_a_violation_is_blocked_logged_by_the_browser_and_reported(
    browser, login, users, live_server, caplog
):
    """The check above can fail: an inline script injected into a page is blocked, shows up
    in the browser log, and the browser's report reaches /csp-report/."""
    login("op", PASSWORD)
    browser.get(f"{live_server.url}/status/")
    csp_violations(browser)
    with caplog.at_level(logging.WARNING, logger="cluster_portal.csp"):
        browser.execute_script(
            "const s = document.createElement('script'); s.textContent = 'window.injected = 1';"
            "document.body.appendChild(s);"
        )
        seen: list[str] = []
        WebDriverWait(browser, 5).until(lambda b: seen.extend(csp_violations(b)) or seen)
        assert browser.execute_script("return window.injected === undefined")
        assert "script-src" in seen[0]
        WebDriverWait(browser, 5).until(
            lambda b: any("CSP violation" in r.getMessage() for r in caplog.records)
        )
    report = next(r.getMessage() for r in caplog.records if "CSP violation" in r.getMessage())
    assert "/status/" in report and "script-src" in report and "window.injected" in report


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "path, ready",
    [
        ("/admin/", "#content-main"),
        ("/admin/rollout/migrationplan/add/", "#migrationplan_form"),
        ("/api/v1/metrics/", ".response-info"),  # DRF's browsable API
        ("/api/v1/workloads/", "button[data-target='#filtersModal']"),  # with a filter form
        ("/api/docs/", ".swagger-ui .info"),  # Swagger UI, rendered by its scripts
    ],
)
def test_admin_browsable_api_and_swagger_ui_work_under_the_policy(
    browser, live_server, django_user_model, path, ready
):
    from tests.conftest import PASSWORD as password

    django_user_model.objects.create_superuser("root", password=password)
    browser.get(f"{live_server.url}/admin/login/")
    browser.find_element(By.ID, "id_username").send_keys("root")
    browser.find_element(By.ID, "id_password").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    WebDriverWait(browser, 15).until(lambda b: "/admin/login/" not in b.current_url)
    csp_violations(browser)
    browser.get(f"{live_server.url}{path}")
    WebDriverWait(browser, 15).until(lambda b: b.find_elements(By.CSS_SELECTOR, ready))
    assert csp_violations(browser) == []


@pytest.mark.django_db(transaction=True)
def test_a_chart_exports_as_png_under_the_policy_and_offers_no_cloud_button(
    browser, login, users, tenants, live_server, tmp_path
):
    """Issue 24: Plotly's PNG export draws the chart through a ``blob:`` image, which
    ``img-src 'self' data:`` refused; and every toolbar offered "Share chart" to Plotly Cloud."""
    import time

    twin_with_history(tenants)
    browser.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path)}
    )
    login("op", PASSWORD)
    browser.get(f"{live_server.url}/dashboards/?cluster=twin-e2e&range=6h")
    wait_loaded(browser)
    wait_for_a_drawn_chart(browser)
    csp_violations(browser)
    titles = browser.execute_script(
        "return Array.from(document.querySelectorAll('.modebar-btn'))"
        ".map(b => b.getAttribute('data-title'));"
    )
    assert "Download plot as a PNG" in titles, titles
    assert not [t for t in titles if t and ("Share" in t or "cloud" in t.lower())], titles
    # What the export draws: recorded on the way through Plotly's own image API.
    browser.execute_script(
        "window.__exported = []; const draw = Plotly.toImage;"
        "Plotly.toImage = function (fig) {"
        "  window.__exported.push(fig.layout && fig.layout.title && fig.layout.title.text);"
        "  return draw.apply(this, arguments); };"
    )
    chart_title = browser.execute_script(
        "const gd = document.querySelector('.js-plotly-plot');"
        "return gd.previousElementSibling.textContent.trim();"
    )
    # The toolbar's own button, as a person clicks it: a PNG file arrives, named after the
    # page and this chart, and the image carries the chart's title (issue 34, item 8).
    browser.execute_script(
        "document.querySelector('.js-plotly-plot')"
        ".querySelector('.modebar-btn[data-title=\"Download plot as a PNG\"]').click();"
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not list(tmp_path.glob("*.png")):
        time.sleep(0.2)
    files = list(tmp_path.glob("*.png"))
    assert files, "no PNG was downloaded"
    assert files[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    words = re.sub(r"[^a-z0-9]+", "-", chart_title.lower()).strip("-")
    assert files[0].name.endswith(f"-{words}.png"), (files[0].name, chart_title)
    assert browser.execute_script("return window.__exported;") == [chart_title]
    names = browser.execute_script(
        "return Array.from(document.querySelectorAll('.js-plotly-plot'))"
        ".map(gd => window.portalPlotly.exportName(gd));"
    )
    assert len(names) > 1 and len(set(names)) == len(names), names  # one file name per chart
    # And the image API the button uses resolves to a PNG.
    image = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "Plotly.toImage(document.querySelector('.js-plotly-plot'), {format: 'png'})"
        ".then(url => done(url.slice(0, 22)), err => done('error: ' + err));"
    )
    assert image == "data:image/png;base64,", image
    assert csp_violations(browser) == []
