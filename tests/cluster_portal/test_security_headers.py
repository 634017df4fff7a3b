"""Every response carries the security headers and a strict Content-Security-Policy."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
from pathlib import Path

import plotly
import pytest
from django.conf import settings as django_settings
from django.test import Client, RequestFactory

from cluster_portal.security import client_ip
from tests.cluster_portal.test_settings import ROOT, run_python

COMMON = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def directives(response) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    parts = [p.strip().split() for p in policy.split(";") if p.strip()]
    return {name: values for name, *values in parts}


def assert_secure(response) -> None:
    for header, value in COMMON.items():
        assert response.get(header) == value, (header, response.get(header))
    policy = directives(response)
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'", "'report-sample'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["base-uri"] == ["'self'"]
    assert policy["form-action"] == ["'self'"]
    # blob: for images only (Plotly's PNG export draws the chart through a blob: URL).
    assert policy["img-src"] == ["'self'", "data:", "blob:"]
    for name in ("default-src", "script-src", "style-src", "connect-src", "font-src"):
        assert "blob:" not in policy.get(name, []), name
    assert policy["report-uri"] == ["/csp-report/"]
    # No inline scripts, no eval, no foreign origins — anywhere in the policy.
    for name, values in policy.items():
        for value in values:
            assert value not in ("'unsafe-inline'", "'unsafe-eval'", "*", "http:", "https:"), name
    # Inline styles: none but the exact hashes Plotly needs (see base.py).
    assert "'unsafe-inline'" not in policy["style-src"]
    assert all(
        v == "'self'" or v.startswith("'sha256-") or v == "'report-sample'"
        for v in policy["style-src"]
    )
    assert "Strict-Transport-Security" not in response  # production only


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kind, path, role, status",
    [
        ("login page", "/login/", None, 200),
        ("operator page", "/dashboards/", "operator", 200),
        ("customer page", "/workloads/", "customer", 200),
        ("redirect to login", "/dashboards/", None, 302),
        ("403 page", "/dashboards/", "customer", 403),
        ("API JSON", "/api/v1/metrics/", "operator", 200),
        ("API error JSON", "/api/v1/metrics/", None, 401),
        ("404", "/no-such-page/", None, 404),
        ("static file via WhiteNoise", "/static/css/portal.css", None, 200),
        ("Plotly bundle via WhiteNoise", "/static/plotly/plotly.min.js", None, 200),
        ("liveness probe", "/healthz", None, 200),
        ("admin login", "/admin/login/", None, 200),
    ],
)
def test_every_kind_of_response_carries_the_headers(client_as, client, kind, path, role, status):
    http = client_as(role) if role else client
    response = http.get(path)
    assert response.status_code == status, kind
    assert_secure(response)


@pytest.mark.django_db
def test_the_csp_report_answer_carries_the_headers_too(client):
    response = client.post(
        "/csp-report/",
        data=json.dumps({"csp-report": {"violated-directive": "script-src"}}),
        content_type="application/csp-report",
    )
    assert response.status_code == 204
    assert_secure(response)


def test_plotly_style_hashes_match_the_installed_plotly_bundle():
    """The two style hashes in the policy are those of what the installed plotly.js injects.

    If plotly is upgraded and this fails, recompute them from the messages here (and rerun
    tests/e2e/test_csp.py, which checks the rendered pages in Chromium).
    """
    bundle = PLOTLY_JS.read_text(encoding="utf-8")
    empty = "'sha256-" + base64.b64encode(hashlib.sha256(b"").digest()).decode() + "'"
    assert django_settings.PLOTLY_EMPTY_STYLE_HASH == empty
    # Plotly's global stylesheet is an empty <style> filled through insertRule…
    assert 'n.appendChild(document.createTextNode(""))' in bundle
    assert ".insertRule(" in bundle
    # …and MapLibre's stylesheet is a <style> with a fixed text, injected at load.
    found = re.search(r"e\.textContent=\'(\.maplibregl-map\{[^\']*)\'", bundle)
    assert found, "MapLibre's inline stylesheet is no longer where it was in plotly.min.js"
    css = found.group(1)
    assert "\\" not in css  # a JS literal without escapes: its text is the style's text
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    assert django_settings.PLOTLY_MAPLIBRE_STYLE_HASH == f"'sha256-{digest}'", digest


def test_the_drf_button_style_hash_matches_the_installed_browsable_api():
    import rest_framework

    template = Path(rest_framework.__file__).parent / "templates/rest_framework/base.html"
    style = "float: right; margin-right: 10px"
    assert f'style="{style}"' in template.read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    assert django_settings.DRF_BUTTON_STYLE_HASH == f"'sha256-{digest}'"


def test_templates_have_no_inline_script_style_or_event_handler():
    """What the policy forbids must not be in the templates in the first place."""
    offenders = []
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        for pattern in (
            r"<script(?![^>]*\bsrc=)[^>]*>",  # a script without src
            r"<style\b",
            r"\sstyle\s*=",
            r"\son[a-z]+\s*=",  # onclick=, onload=, ...
            r"javascript:",
        ):
            offenders += [
                f"{path.relative_to(ROOT)}: {m.group(0)}" for m in re.finditer(pattern, text)
            ]
    assert offenders == []


# --- the CSP report endpoint --------------------------------------------------------------


@pytest.mark.django_db
def test_csp_reports_are_logged_and_stored_nowhere(caplog):
    browser = Client(enforce_csrf_checks=True)  # like a browser: no CSRF token, no session
    report = {
        "csp-report": {
            "document-uri": "https://portal.example.com/dashboards/",
            "violated-directive": "style-src-elem",
            "blocked-uri": "inline",
            "source-file": "https://portal.example.com/static/plotly/plotly.min.js",
            "script-sample": ".x{}",
            "original-policy": "default-src 'self'",
        }
    }
    with caplog.at_level(logging.WARNING, logger="cluster_portal.csp"):
        response = browser.post(
            "/csp-report/", data=json.dumps(report), content_type="application/csp-report"
        )
    assert response.status_code == 204 and response.content == b""
    (record,) = [r for r in caplog.records if r.name == "cluster_portal.csp"]
    logged = json.loads(record.getMessage().split(": ", 1)[1])
    assert logged["violated-directive"] == "style-src-elem"
    assert logged["document-uri"] == "https://portal.example.com/dashboards/"
    assert "original-policy" not in logged


@pytest.mark.django_db
def test_reporting_api_batches_are_logged_in_one_line(client, caplog):
    batch = [
        {
            "type": "csp-violation",
            "body": {"effectiveDirective": "img-src", "blockedURL": "https://x.example/a.png"},
        },
        {
            "type": "csp-violation",
            "body": {"effectiveDirective": "script-src-elem", "blockedURL": "inline"},
        },
    ]
    with caplog.at_level(logging.WARNING, logger="cluster_portal.csp"):
        response = client.post(
            "/csp-report/", data=json.dumps(batch), content_type="application/reports+json"
        )
    assert response.status_code == 204
    (record,) = [r for r in caplog.records if r.name == "cluster_portal.csp"]
    logged = json.loads(record.getMessage().split(": ", 1)[1])
    assert logged["reports"] == 2 and logged["effectiveDirective"] == "img-src"
    assert logged["directives"] == {"img-src": 1, "script-src-elem": 1}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [b"", b"not json", b'{"something": "else"}', b"[1, 2]", b'{"csp-report": "x"}', b"x" * 20_000],
)
def test_bad_reports_get_400_and_log_nothing(client, caplog, body):
    with caplog.at_level(logging.WARNING, logger="cluster_portal.csp"):
        response = client.post("/csp-report/", data=body, content_type="application/csp-report")
    assert response.status_code == 400
    assert not [r for r in caplog.records if r.name == "cluster_portal.csp"]


@pytest.mark.django_db
def test_the_report_endpoint_only_takes_post(client):
    assert client.get("/csp-report/").status_code == 405


# --- the client address used by the login lockout -------------------------------------------


@pytest.mark.parametrize(
    "proxies, forwarded, expected",
    [
        (0, "6.6.6.6", "10.0.0.9"),  # no trusted proxy: the header is the client's own claim
        (1, "6.6.6.6, 198.51.100.7", "198.51.100.7"),  # the proxy appended the real address
        (2, "6.6.6.6, 198.51.100.7, 10.0.0.2", "198.51.100.7"),
        (1, "", "10.0.0.9"),  # proxy configured but no header: fall back to the socket
    ],
)
def test_client_ip_trusts_only_the_configured_proxies(settings, proxies, forwarded, expected):
    settings.TRUSTED_PROXY_COUNT = proxies
    request = RequestFactory().post(
        "/login/", REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR=forwarded
    )
    assert client_ip(request) == expected


# --- production ----------------------------------------------------------------------------

PRODUCTION_HEADERS = """
import json, django
django.setup()
from django.test import Client
response = Client().get("/healthz", secure=True)
print(json.dumps({"status": response.status_code, "headers": dict(response.headers)}))
"""


def test_production_adds_hsts_on_top_of_the_same_headers(tmp_path):
    result = run_python(
        PRODUCTION_HEADERS,
        {
            "PORTAL_VAR_DIR": str(tmp_path),
            "SECRET_KEY": "k9$Fq2!xZ7@pL4#vN8%tR1^wB6&yH3*mJ0(cD5)sG-eU_aQ=iO+oP[lK]",
            "ALLOWED_HOSTS": "testserver",
        },
        module="cluster_portal.settings.production",
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    headers = answer["headers"]
    assert answer["status"] == 200
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    for header, value in COMMON.items():
        assert headers[header] == value
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert "script-src 'self'" in headers["Content-Security-Policy"]
