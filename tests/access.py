"""The one permission/tenancy test mixin every page and endpoint test uses.

Subclass ``PageAccessCases`` (server-rendered pages) or ``ApiAccessCases`` (REST endpoints),
set ``url`` and ``allowed_roles``; the mixin checks anonymous access and every role.
Roles: operator, approver, customer (tenant acme), other_customer (tenant panda).
"""

from __future__ import annotations

import pytest

ALL_ROLES = ("operator", "approver", "customer", "other_customer")


class PageAccessCases:
    url: str
    allowed_roles: tuple[str, ...] = ALL_ROLES

    def get_url(self, users) -> str:
        return self.url

    @pytest.mark.django_db
    def test_anonymous_visitor_is_sent_to_login(self, client, users):
        response = client.get(self.get_url(users))
        assert response.status_code == 302
        assert response["Location"].startswith("/login/")

    @pytest.mark.django_db
    @pytest.mark.parametrize("role", ALL_ROLES)
    def test_each_role_gets_the_page_or_a_403(self, client_as, users, role):
        response = client_as(role).get(self.get_url(users))
        expected = 200 if role in self.allowed_roles else 403
        assert response.status_code == expected, f"{role} got {response.status_code}"


class ApiAccessCases:
    url: str
    allowed_roles: tuple[str, ...] = ALL_ROLES

    def get_url(self, users) -> str:
        return self.url

    @pytest.mark.django_db
    def test_anonymous_request_is_rejected(self, client, users):
        response = client.get(self.get_url(users))
        assert response.status_code in (401, 403)

    @pytest.mark.django_db
    @pytest.mark.parametrize("role", ALL_ROLES)
    def test_each_role_gets_the_data_or_a_403(self, client_as, users, role):
        response = client_as(role).get(self.get_url(users))
        expected = 200 if role in self.allowed_roles else 403
        assert response.status_code == expected, f"{role} got {response.status_code}"
