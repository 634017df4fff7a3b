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
