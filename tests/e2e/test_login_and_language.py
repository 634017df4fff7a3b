"""In a real browser: sign in, see the role's navigation, switch to Chinese."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import PASSWORD


@pytest.mark.django_db(transaction=True)
def test_operator_signs_in_and_switches_the_navigation_to_chinese(
    browser, login, users, live_server
):
    login("op", PASSWORD)
    WebDriverWait(browser, 10).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "nav.mainnav"))
    )
    nav = browser.find_element(By.CSS_SELECTOR, "nav.mainnav").text
    assert "Status" in nav and "Alerts" in nav
    Select(browser.find_element(By.ID, "language-select")).select_by_value("zh-hans")
    page_before = browser.find_element(By.TAG_NAME, "html")
    browser.find_element(By.CSS_SELECTOR, "form.langswitch button[type=submit]").click()
    # Wait for the old document to go first: reading the navigation while the answer to the
    # POST replaces the page can find a node in the old document and read it in the new one
    # ("Node with given id does not belong to the document").
    WebDriverWait(browser, 15).until(ec.staleness_of(page_before))
    WebDriverWait(browser, 10).until(
        ec.text_to_be_present_in_element((By.CSS_SELECTOR, "nav.mainnav"), "状态")
    )
    assert "告警" in browser.find_element(By.CSS_SELECTOR, "nav.mainnav").text


@pytest.mark.django_db(transaction=True)
def test_a_customer_sees_no_operator_navigation_and_gets_403_on_status(
    browser, login, users, live_server
):
    login("cust-acme", PASSWORD)
    WebDriverWait(browser, 10).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "nav.mainnav"))
    )
    assert "Status" not in browser.find_element(By.CSS_SELECTOR, "nav.mainnav").text
    browser.get(f"{live_server.url}/status/")
    assert "Not allowed" in browser.page_source
