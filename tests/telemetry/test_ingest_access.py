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
