"""Access checks for the two ingestion endpoints (POST, ``ingest`` scope): among signed-in
users only operators may push telemetry; tenant-bound tokens are checked in test_ingest_*."""

from __future__ import annotations

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
