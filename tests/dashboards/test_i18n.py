"""The portal ships English and Simplified Chinese; the header switcher changes language."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_language_switch_renders_the_navigation_in_chinese(client_as):
    client = client_as("operator")
    english = client.get("/").content.decode()
    assert ">Status<" in english
    response = client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    assert response.status_code == 302
    chinese = client.get("/").content.decode()
    assert 'lang="zh-hans"' in chinese
    assert ">状态<" in chinese
    assert ">退出登录<" in chinese or "退出" in chinese
    assert ">Status<" not in chinese


@pytest.mark.django_db
def test_login_page_is_translated_for_a_chinese_browser(client):
    page = client.get("/login/", headers={"accept-language": "zh-CN,zh;q=0.9"}).content.decode()
    assert "登录" in page


@pytest.mark.django_db
def test_a_cached_dashboard_payload_is_never_served_in_another_language(client_as, settings):
    from django.core.cache import cache

    settings.DASHBOARD_CACHE_SECONDS = 30
    cache.clear()
    client = client_as("operator")
    url = "/api/v1/dashboards/workloads/?range=6h"
    try:
        english = client.get(url, headers={"accept-language": "en"}).json()
        client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
        chinese = client.get(url).json()
    finally:
        cache.clear()
    assert "kind" in english["tables"]["workloads"]["labels"]
    assert "类型" in chinese["tables"]["workloads"]["labels"]
    assert "kind" not in chinese["tables"]["workloads"]["labels"]


@pytest.mark.django_db
def test_last_updated_is_formatted_for_the_readers_language(client_as, settings):
    client = client_as("operator")
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    payload = client.get("/api/v1/dashboards/workloads/?range=6h").json()
    # Django's zh-hans DATETIME_FORMAT, not the browser's (US) default locale.
    assert "年" in payload["updated_display"] and "月" in payload["updated_display"]


@pytest.mark.django_db
def test_chart_pages_load_plotlys_chinese_locale_only_in_chinese(client_as, settings):
    client = client_as("operator")
    english = client.get("/workloads/").content.decode()
    assert "plotly-locale-zh-cn.js" not in english
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    chinese = client.get("/workloads/").content.decode()
    assert chinese.index("plotly.min.js") < chinese.index("plotly-locale-zh-cn.js")


@pytest.mark.django_db
def test_the_time_pickers_to_is_the_range_word_not_the_audit_column(client_as, settings):
    client = client_as("operator")
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    page = client.get("/workloads/").content.decode()
    assert '<label>至 <input type="datetime-local" name="end"' in page
    assert "变更后" not in page
