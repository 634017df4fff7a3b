"""The one permission/tenancy test mixin every page and endpoint test uses.

Subclass ``PageAccessCases`` (server-rendered pages) or ``ApiAccessCases`` (REST endpoints),
set ``url`` (or override ``get_url``) and ``allowed_roles``; the mixin checks anonymous access
and every role. Roles: operator, approver, customer (tenant acme), other_customer (tenant
panda).

Class attributes:

* ``route`` — the URL name the class covers (``"api:alerts"``, ``"migration-plan"``). Needed
  when the URL is built at test time (``get_url``); with a static ``url`` it is resolved.
  ``tests/test_route_coverage.py`` fails for any route no class covers, and the anonymous
  test checks that the URL really resolves to ``route``.
* ``method`` — ``"get"`` (default) or ``"post"`` for command routes; ``post_data(users)``
  gives the body (JSON for the API, a form for pages; ``content_type`` changes it). For a POST an allowed role passes when the answer is not 401/403/404 (nor a
  5xx): a 302, 400 or 409 from the command itself still proves the role got through.
* ``hidden_roles`` — roles that get 404 instead of 403 (a customer of another tenant asking
  for a tenant-owned object: not even its existence is confirmed).

Opt-in tenancy hooks; each one a subclass defines adds one test (no skipped placeholders):

* ``other_tenant_url(self, users, tenants) -> str`` — the same route for an object owned by
  the *other* tenant (panda): acme's customer gets 404 for it, with the class's ``method``.
* ``list_markers(self, users, tenants) -> list[str]`` — create rows of both tenants and return
  strings that identify panda's rows (names, keys): none of them, nor panda's name or slug as
  a JSON value, appears in acme's customer's answer, and the operator (when allowed) sees
  them, so the check can fail.
* ``other_tenant_payload(self, users, tenants) -> dict`` — a create (or move) payload naming
  panda: posted by acme's customer to ``create_url(users)`` it is either refused (400) or the
  created object belongs to acme (``created_tenant(response)``, by default the answer's
  ``tenant`` field).
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from django.urls import resolve

ALL_ROLES = ("operator", "approver", "customer", "other_customer")
DENIED = (401, 403, 404)


def _tenant_values(body) -> list:
    """Every string value in a JSON body, flattened."""
    if isinstance(body, dict):
        return [v for value in body.values() for v in _tenant_values(value)]
    if isinstance(body, list):
        return [v for value in body for v in _tenant_values(value)]
    return [body] if isinstance(body, str) else []


class _AccessCases:
    url: str
    route: str | None = None
    method: str = "get"
    allowed_roles: tuple[str, ...] = ALL_ROLES
    hidden_roles: tuple[str, ...] = ()
    content_type: str | None = None  # of a POST body; None: a form

    # Opt-in hooks (see the module docstring); ``None`` means "not a tenant-owned route".
    other_tenant_url = None
    list_markers = None
    other_tenant_payload = None

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for hook, name, test in _OPT_IN_TESTS:
            if getattr(cls, hook, None) is not None and name not in cls.__dict__:
                setattr(cls, name, test)

    def get_url(self, users) -> str:
        return self.url

    def post_data(self, users) -> dict:
        return {}

    def call(self, client, url: str, users, data: dict | None = None):
        if self.method == "get":
            return client.get(url)
        body = self.post_data(users) if data is None else data
        if self.content_type is None:  # a browser form
            return getattr(client, self.method)(url, body)
        if self.content_type == "application/json" and not isinstance(body, str | bytes):
            body = json.dumps(body)
        return client.generic(self.method.upper(), url, body, content_type=self.content_type)

    def check_route(self, url: str) -> None:
        if self.route:
            found = resolve(urlsplit(url).path).view_name
            assert found == self.route, f"{url} resolves to {found!r}, not {self.route!r}"

    def expect_allowed(self, role: str, response) -> None:
        if self.method == "get":
            assert response.status_code == 200, f"{role} got {response.status_code}"
        else:
            code = response.status_code
            assert code not in DENIED and code < 500, f"{role} got {code}"

    @pytest.mark.django_db
    @pytest.mark.parametrize("role", ALL_ROLES)
    def test_each_role_gets_the_data_or_a_403(self, client_as, users, role):
        response = self.call(client_as(role), self.get_url(users), users)
        if role in self.hidden_roles:
            assert response.status_code == 404, f"{role} got {response.status_code}"
        elif role in self.allowed_roles:
            self.expect_allowed(role, response)
        else:
            assert response.status_code == 403, f"{role} got {response.status_code}"

    # --- opt-in tenancy checks (attached by __init_subclass__) --------------------------------

    def create_url(self, users) -> str:
        return self.get_url(users)

    def created_tenant(self, response) -> str | None:
        return response.json().get("tenant")


@pytest.mark.django_db
def _another_tenants_object_is_a_404(self, client_as, users, tenants):
    url = self.other_tenant_url(users, tenants)
    self.check_route(url)
    response = self.call(client_as("customer"), url, users)
    assert response.status_code == 404, f"acme's customer got {response.status_code} for {url}"


@pytest.mark.django_db
def _lists_never_show_another_tenants_rows(self, client_as, users, tenants):
    markers = list(self.list_markers(users, tenants))
    assert markers, "list_markers must name at least one of panda's rows"
    url = self.get_url(users)
    response = client_as("customer").get(url)
    assert response.status_code == 200
    text = response.content.decode()
    leaked = [m for m in (*markers, tenants["panda"].name) if m in text]
    if response.get("Content-Type", "").startswith("application/json"):
        panda = {tenants["panda"].slug, tenants["panda"].name}
        leaked += [v for v in _tenant_values(response.json()) if v in panda]
    assert not leaked, f"acme's customer sees panda's rows at {url}: {leaked}"
    if "operator" in self.allowed_roles:
        # The markers are real: staff do see them on the same route.
        seen = client_as("operator").get(url).content.decode()
        assert any(m in seen for m in markers), f"no marker in the operator's view of {url}"


@pytest.mark.django_db
def _cannot_create_into_another_tenant(self, client_as, users, tenants):
    payload = self.other_tenant_payload(users, tenants)
    client = client_as("customer")
    url = self.create_url(users)
    if isinstance(self, ApiAccessCases):
        response = client.post(url, json.dumps(payload), content_type="application/json")
    else:
        response = client.post(url, payload)
    assert response.status_code not in (401, 403, 404) and response.status_code < 500, (
        f"acme's customer got {response.status_code}: the route must accept their creates"
    )
    if response.status_code != 400:
        owner = self.created_tenant(response)
        assert owner in ("acme", tenants["acme"].pk), f"created for {owner!r}, not acme"


_OPT_IN_TESTS = (
    ("other_tenant_url", "test_another_tenants_object_is_a_404", _another_tenants_object_is_a_404),
    (
        "list_markers",
        "test_lists_never_show_another_tenants_rows",
        _lists_never_show_another_tenants_rows,
    ),  # noqa: E501
    (
        "other_tenant_payload",
        "test_cannot_create_into_another_tenant",
        _cannot_create_into_another_tenant,
    ),  # noqa: E501
)


class PageAccessCases(_AccessCases):
    @pytest.mark.django_db
    def test_anonymous_visitor_is_sent_to_login(self, client, users):
        url = self.get_url(users)
        self.check_route(url)
        response = self.call(client, url, users)
        assert response.status_code == 302
        assert response["Location"].startswith("/login/")

    @pytest.mark.django_db
    @pytest.mark.parametrize("role", ALL_ROLES)
    def test_each_role_gets_the_page_or_a_403(self, client_as, users, role):
        _AccessCases.test_each_role_gets_the_data_or_a_403(self, client_as, users, role)

    # Pages keep their historical test name; the generic one is not collected twice.
    test_each_role_gets_the_data_or_a_403 = None


class ApiAccessCases(_AccessCases):
    content_type = "application/json"

    @pytest.mark.django_db
    def test_anonymous_request_is_rejected(self, client, users):
        url = self.get_url(users)
        self.check_route(url)
        response = self.call(client, url, users)
        assert response.status_code in (401, 403)
