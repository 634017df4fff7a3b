"""Browser tests: Debian's chromium + chromium-driver driven by Selenium, never a download.

Skipped, with the reason, where the system browser is not installed (``apt-get install
chromium chromium-driver``; ``make test`` and ``.ci/run`` install it when they can).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")

# Selenium Manager must never fetch a browser or driver.
os.environ["SE_OFFLINE"] = "true"


@pytest.fixture
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip(
            "Debian chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="cp-chromium-")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    # Console messages, including Content-Security-Policy violations, for driver.get_log.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.implicitly_wait(0)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def login(browser, live_server):
    """``login(username, password)`` signs in through the real login form."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def sign_in(username: str, password: str) -> None:
        browser.get(f"{live_server.url}/login/")
        browser.find_element(By.ID, "id_username").send_keys(username)
        browser.find_element(By.ID, "id_password").send_keys(password)
        browser.find_element(By.CSS_SELECTOR, "form[action='/login/'] button[type=submit]").click()
        # Wait for the signed-in page: navigating on before the POST's answer has set the
        # session cookie would land on the login page again.
        WebDriverWait(browser, 15).until(
            lambda b: (
                "/login/" not in b.current_url and b.find_elements(By.CSS_SELECTOR, "header .who")
            )
        )

    return sign_in
