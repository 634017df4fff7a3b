"""Attacks through what the portal sends out or renders (issue 15 §5, §8, §9), replayed once."""

from __future__ import annotations

import csv
import io
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from cluster_portal.web.csv import csv_cell
from cluster_portal.web.outbound import REFUSED, address_allowed, outbound_opener
from dashboards.charts import bars, heatmap, timeseries
from inventory.models import Cluster
from rollout.models import AuditEntry, WebhookDelivery, WebhookSubscription
from rollout.services.audit import Actor, audit_record
from rollout.services.webhooks import webhook_deliver
from telemetry.models import ExporterTarget
from telemetry.receivers.scrape import exporter_scrape

ROOT = Path(__file__).resolve().parents[2]


class _Receiver:
    """A loopback server that would reveal a secret if anyone reached it."""

    def __init__(self, redirect_to: str | None = None) -> None:
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                hits.append(self.path)
                if redirect_to:
                    self.send_response(302)
                    self.send_header("Location", redirect_to)
                    self.end_headers()
                    return
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"internal-secret 42\n")

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/"

    def close(self):
        self.server.shutdown()


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "::1",
        "169.254.169.254",
        "10.0.0.5",
        "192.168.1.1",
        "172.16.0.1",
        "100.64.0.1",
        "224.0.0.1",
        "240.0.0.1",
        "0.0.0.0",
        "::ffff:127.0.0.1",
        "fe80::1",
        "fc00::1",
    ],
)
def test_outbound_requests_refuse_internal_addresses_by_default(address, settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    assert not address_allowed(address)


def test_an_operator_may_allow_list_a_private_network(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["10.20.0.0/16"]
    assert address_allowed("10.20.3.4") and not address_allowed("10.21.0.1")
    assert address_allowed("93.184.216.34")


@pytest.mark.django_db
def test_a_webhook_to_loopback_is_refused_by_policy_without_echoing_the_answer(
    plan_factory, settings
):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    receiver = _Receiver()
    try:
        plan = plan_factory()
        subscription = WebhookSubscription.objects.create(
            name="inside", url=receiver.url, events=["transition"], secret="s"
        )
        delivery = WebhookDelivery.objects.create(
            subscription=subscription, event="transition", payload={"plan": {"id": plan.pk}}
        )
        delivery = webhook_deliver(delivery_id=delivery.pk)
    finally:
        receiver.close()
    assert receiver.hits == []
    assert delivery.last_error == REFUSED and delivery.last_status_code is None


@pytest.mark.django_db
def test_scraping_the_cloud_metadata_address_or_loopback_is_refused_by_policy(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    receiver = _Receiver()
    cluster = Cluster.objects.create(name="c1", kind=Cluster.Kind.UNIFIED)
    try:
        for url in (receiver.url, "http://169.254.169.254/latest/meta-data/"):
            target = ExporterTarget.objects.create(
                name=f"t{len(url)}", url=url, cluster=cluster, node="n1"
            )
            result = exporter_scrape(target=target)
            assert not result["ok"] and REFUSED in result["error"]
            assert "internal-secret" not in result["error"]
    finally:
        receiver.close()
    assert receiver.hits == []


def test_a_redirect_to_an_internal_address_is_refused_too(settings):
    # The first hop is allowed (as if it were public); its redirect points inside.
    inside = _Receiver()
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    outside = _Receiver(redirect_to=inside.url.replace("127.0.0.1", "127.0.0.2"))
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    try:
        with pytest.raises(OSError) as caught:
            outbound_opener().open(outside.url, timeout=5)
    finally:
        inside.close()
        outside.close()
    assert REFUSED in str(caught.value)
    assert outside.hits == ["/"] and inside.hits == []


def test_names_that_resolve_inside_are_refused_after_dns_resolution(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    assert socket.getaddrinfo("localhost", 80)
    with pytest.raises(OSError) as caught:
        outbound_opener().open("http://localhost:9/", timeout=5)
    assert REFUSED in str(caught.value)


@pytest.mark.parametrize("text", ["=1+1", "+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_every_csv_cell_neutralises_formulas(text):
    assert csv_cell(text).startswith("'")
    assert csv_cell(-2.5) == "-2.5" and csv_cell("-2.5") == "-2.5"  # numbers stay numbers


def test_no_export_writes_csv_without_the_one_writer():
    offenders = []
    for path in ROOT.glob("*/**/*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("tests/", ".venv/", "bench/", "simulation/engine/")):
            continue
        if rel == "cluster_portal/web/csv.py":
            continue
        if re.search(r"\bcsv\.writer\(|\bcsv\.DictWriter\(", path.read_text()):
            offenders.append(rel)
    assert offenders == []


@pytest.mark.django_db
def test_a_formula_in_an_audit_reason_is_inert_in_the_csv(client_as, plan_factory):
    plan = plan_factory()
    audit_record(actor=Actor(), action="note", plan=plan, reason='=HYPERLINK("http://x","y")')
    text = client_as("approver").get("/migrations/audit/?format=csv").content.decode()
    reasons = [row["reason"] for row in csv.DictReader(io.StringIO(text))]
    assert '\'=HYPERLINK("http://x","y")' in reasons
    assert AuditEntry.objects.filter(action="note").exists()


def test_html_in_a_label_is_text_in_plotly_titles_names_and_ticks():
    evil = '<a href="https://evil.example">click</a>'
    figures = [
        timeseries(title=evil, series={evil: []}),
        heatmap(title=evil, x_labels=[evil], y_labels=["r"], matrix=[[1.0]]),
        bars(title=evil, categories=[evil], groups={evil: [1.0]}),
    ]
    for figure in figures:
        assert "<a" not in str(figure) and "&lt;a href" in str(figure)


@pytest.mark.django_db
def test_anonymous_readyz_names_components_without_addresses(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    response = client.get("/readyz")
    assert response.status_code == 503 and response.json()["failing"] == ["broker"]
    assert "127.0.0.1" not in response.content.decode()
    assert "detail" not in response.json()["components"]["broker"]


@pytest.mark.django_db
def test_a_promql_data_source_on_a_private_address_is_refused_by_policy(settings):
    from inventory.models import Cluster
    from telemetry import read
    from telemetry.models import PromQLDataSource

    settings.OUTBOUND_ALLOWED_NETWORKS = []
    cluster = Cluster.objects.create(name="ssrf-promql", kind=Cluster.Kind.UNIFIED)
    PromQLDataSource.objects.create(cluster=cluster, url="http://169.254.169.254/latest")
    with pytest.raises(read.DataSourceUnavailable) as caught:
        read.latest_kind(cluster.id, "accelerator", ["accelerator_utilization_ratio"])
    assert "refused by policy" in str(caught.value)
    assert "latest" not in caught.value.reason.split("refused")[1]  # nothing echoed back


def _haproxy_router(address: str):
    from rollout.models import TrafficRouter

    return TrafficRouter(
        name="edge",
        kind="haproxy",
        haproxy_address=address,
        haproxy_backend="llm",
        haproxy_source_server="baseline",
        haproxy_target_server="canary",
    )


@pytest.mark.django_db
def test_a_router_naming_another_local_socket_is_refused_at_save_and_at_connect(tmp_path, settings):
    # An operator once pointed a router at the server's PostgreSQL socket, and the portal
    # stored and showed the database's answer. Sockets outside ROUTER_SOCKET_DIRS are refused.
    from django.core.exceptions import ValidationError

    from rollout.routers import HAProxyRouter, RouterError

    settings.ROUTER_SOCKET_DIRS = [str(tmp_path / "haproxy")]
    (tmp_path / "haproxy").mkdir()
    (tmp_path / "haproxy" / "escape.sock").symlink_to(tmp_path / "db.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "db.sock"))
    listener.listen(1)
    try:
        for address in (f"unix:{tmp_path / 'db.sock'}", f"unix:{tmp_path / 'haproxy/escape.sock'}"):
            with pytest.raises(ValidationError) as caught:
                _haproxy_router(address).full_clean()
            assert "ROUTER_SOCKET_DIRS" in " ".join(caught.value.message_dict["haproxy_address"])
            router = HAProxyRouter(
                address=address, backend="llm", source_server="a", target_server="b"
            )
            with pytest.raises(RouterError) as refused:
                router.read_share()
            assert refused.value.code == "unreachable" and "policy" in refused.value.detail
        _haproxy_router(f"unix:{tmp_path / 'haproxy/admin.sock'}").full_clean()
    finally:
        listener.close()


@pytest.mark.django_db
@pytest.mark.parametrize("address", ["127.0.0.1:5432", "[::1]:6379", "169.254.169.254:80"])
def test_a_router_tcp_address_is_checked_at_save_like_a_webhook_url(address, settings):
    from django.core.exceptions import ValidationError

    settings.OUTBOUND_ALLOWED_NETWORKS = []
    with pytest.raises(ValidationError) as caught:
        _haproxy_router(address).full_clean()
    assert "outbound policy" in " ".join(caught.value.message_dict["haproxy_address"])
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8", "::1/128", "169.254.0.0/16"]
    _haproxy_router(address).full_clean()
