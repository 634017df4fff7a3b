"""Every route is covered by the permission/tenancy mixin (tests/access.py), or exempted here.

The test walks every URL pattern of ``cluster_portal.urls`` (through every include), imports
every ``tests/**/test_*.py`` module and collects the ``PageAccessCases`` / ``ApiAccessCases``
subclasses: a class covers its ``route`` (a URL name) or, without one, the route its static
``url`` resolves to. A route nobody covers fails the test, named by view name and pattern, so
a new page or endpoint cannot ship without its access checks.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.exceptions import Resolver404

from tests.access import ApiAccessCases, PageAccessCases

TESTS = Path(__file__).resolve().parent

# Routes that are not tenant data, with why. Prefixes end in ":" (a namespace) or "/" (a path).
EXEMPT_PREFIXES = (
    "admin:",  # Django admin: staff-only by Django itself, tested in tests/monitoring/test_admin
    "admin/",  # the admin's catch-all pattern has no name
)
EXEMPT_NAMES = {
    "set_language": "i18n: switches the interface language, no data",
    "login": "authentication itself",
    "logout": "authentication itself",
    "healthz": "liveness probe for load balancers, no data",
    "readyz": "readiness probe (database and broker up or not), no data",
    "favicon": "the portal's icon, a static file, no data",
    "csp-report": "browsers post CSP violation reports here, anonymously by design",
    "rollout-api:router-callback": (
        "a deploy tool's callback, authenticated by its HMAC signature (no session, no token):"
        " tests/rollout/test_webhook_router.py"
    ),
    "schema": "the OpenAPI document: describes endpoints, holds no tenant data",
    "swagger-ui": "API docs page rendering the schema",
    "redoc": "API docs page rendering the schema",
    "api-schema": "the OpenAPI document (alternative name)",
    "api-docs": "API docs page (alternative name)",
}


def all_routes(resolver: URLResolver | None = None, prefix: str = "", namespace: str = ""):
    """``(view_name, pattern)`` for every URL pattern, recursively through includes."""
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        pattern = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            inner = namespace
            if entry.namespace:
                inner = f"{namespace}{entry.namespace}:"
            yield from all_routes(entry, pattern, inner)
        elif isinstance(entry, URLPattern):
            name = f"{namespace}{entry.name}" if entry.name else None
            yield name, pattern


def exempt(name: str | None, pattern: str) -> bool:
    key = name or pattern
    return key in EXEMPT_NAMES or key.startswith(EXEMPT_PREFIXES) or pattern.startswith("admin/")


def import_every_test_module() -> list[str]:
    failures = []
    for path in sorted(TESTS.rglob("test_*.py")):
        module = ".".join(path.relative_to(TESTS.parent).with_suffix("").parts)
        try:
            importlib.import_module(module)
        except Exception as exc:  # report, do not hide routes behind a broken import
            failures.append(f"{module}: {exc!r}")
    return failures


def access_classes() -> list[type]:
    found, todo = [], [PageAccessCases, ApiAccessCases]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            found.append(sub)
            todo.append(sub)
    return found


def covered_route(cls: type) -> str | None:
    if getattr(cls, "route", None):
        return cls.route
    url = getattr(cls, "url", None)
    if isinstance(url, str) and url:
        try:
            return resolve(url.split("?")[0]).view_name
        except Resolver404:
            return None
    return None


def test_every_test_module_imports():
    assert import_every_test_module() == []


def test_every_route_has_access_tests():
    import_every_test_module()
    covered = {covered_route(cls) for cls in access_classes()} - {None}
    missing = sorted(
        f"{name or '(unnamed)'}  [{pattern}]"
        for name, pattern in all_routes()
        if not exempt(name, pattern) and name not in covered
    )
    assert not missing, (
        "Routes without a PageAccessCases/ApiAccessCases class (set `route` on one, or exempt "
        "them in tests/test_route_coverage.py with a reason):\n  " + "\n  ".join(missing)
    )


def test_every_concrete_access_class_names_what_it_covers():
    """A Test* class whose URL is built at run time must say its ``route``; otherwise the
    coverage above could not see it (and a typo in ``route`` would cover nothing)."""
    import_every_test_module()
    names = {name for name, _ in all_routes()} - {None}
    unknown = sorted(
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in access_classes()
        if cls.__name__.startswith("Test") and covered_route(cls) not in names
    )
    assert not unknown, "Set `route` (a URL name) on:\n  " + "\n  ".join(unknown)


def test_the_walk_sees_nested_and_namespaced_routes():
    routes = dict(all_routes())
    assert routes["api:alerts"] == "api/v1/alerts/"
    assert routes["rollout-api:plan-command"].startswith("api/v1/^plans/")
    assert "admin:index" in routes and exempt("admin:index", routes["admin:index"])
    assert not exempt("api:alerts", routes["api:alerts"])
