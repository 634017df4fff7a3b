"""Access checks for the two ingestion endpoints (POST, ``ingest`` scope): among signed-in
users only operators may push telemetry; tenant-bound tokens are checked in test_ingest_*."""

from __future__ import annotations

import pytest

from tests.access import ApiAccessCases


class TestSampleBatchAccess(ApiAccessCases):
    route = "api:telemetry-samples"
    url = "/api/v1/telemetry/samples/"
    method = "post"
    allowed_roles = ("operator",)

    def post_data(self, users) -> dict:
        return {"samples": []}


class TestPrometheusTextAccess(ApiAccessCases):
    route = "api:telemetry-prometheus"
    url = "/api/v1/telemetry/prometheus/?cluster=nowhere"
    method = "post"
    content_type = "text/plain"
    allowed_roles = ("operator",)

    def post_data(self, users) -> str:
        return 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 50\n'


class TestRemoteWriteAccess(ApiAccessCases):
    route = "api:telemetry-remote-write"
    url = "/api/v1/telemetry/remote-write/?cluster=nowhere"
    method = "post"
    content_type = "application/x-protobuf"
    allowed_roles = ("operator",)

    def post_data(self, users) -> bytes:
        return b"\x00"


class TestPromQLSourceListAccess(ApiAccessCases):
    route = "api:promql-sources"
    url = "/api/v1/promql-sources/"
    method = "get"
    allowed_roles = ("operator",)


class TestPromQLSourceDetailAccess(ApiAccessCases):
    route = "api:promql-source"
    method = "get"
    allowed_roles = ("operator",)

    def get_url(self, users) -> str:
        from inventory.models import Cluster
        from telemetry.models import PromQLDataSource

        cluster, _ = Cluster.objects.get_or_create(name="promql-access")
        source, _ = PromQLDataSource.objects.get_or_create(
            cluster=cluster, defaults={"url": "http://thanos-query:9090", "enabled": False}
        )
        return f"/api/v1/promql-sources/{source.pk}/"


class _EmptyPrometheus:
    """A loopback Prometheus query API that knows no series (a source with no cards yet)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                body = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


class TestPromQLSourceSyncAccess(ApiAccessCases):
    """Registering a source's cards is an operator's command (others 403, anonymous 401)."""

    route = "api:promql-source-sync"
    method = "post"
    content_type = "application/json"
    allowed_roles = ("operator",)
    prometheus: _EmptyPrometheus | None = None

    @pytest.fixture(autouse=True)
    def _loopback_source_allowed(self, settings):
        settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]

    def get_url(self, users) -> str:
        from inventory.models import Cluster
        from telemetry.models import PromQLDataSource

        if TestPromQLSourceSyncAccess.prometheus is None:
            TestPromQLSourceSyncAccess.prometheus = _EmptyPrometheus()
        cluster, _ = Cluster.objects.get_or_create(name="promql-sync-access")
        source, _ = PromQLDataSource.objects.get_or_create(
            cluster=cluster, defaults={"url": self.prometheus.url, "enabled": False}
        )
        return f"/api/v1/promql-sources/{source.pk}/sync/"
