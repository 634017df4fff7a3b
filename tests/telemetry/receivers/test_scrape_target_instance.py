"""The portal's scraper gives samples without an ``instance`` label the target's ``host:port``,
as Prometheus does: a vLLM ``/metrics`` with no host label is scraped (its endpoint keyed by
the target address), not refused whole, and the serving-binding hint names that key.

The engine is a real HTTP server on 127.0.0.1 (ephemeral port); nothing leaves the machine.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from telemetry.catalogue.serving_bindings import serving_binding_create
from telemetry.models import Entity, ExporterTarget, Sample, ServingBinding
from telemetry.receivers.scrape import exporter_scrape, target_instance
from tests.serving_exposition import EngineMetrics

NOW = 1_780_000_000.0

# What a vLLM server's Prometheus client adds beside the engine's families: no host label.
PROCESS = (
    "# TYPE python_gc_objects_collected_total counter\n"
    'python_gc_objects_collected_total{generation="0"} 512\n'
)


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


@pytest.fixture
def engine_server():
    """A vLLM-like ``/metrics`` (``/labelled`` carries its own ``instance``)."""
    engine = EngineMetrics(model="llama-3-8b")
    for i in range(20):
        engine.request(ttft=0.05 + i * 0.01, tpot=0.02)
    labelled = EngineMetrics(model="qwen-7b", labels={"instance": "gpu-07:8000"})
    labelled.request(ttft=0.1, tpot=0.02)
    bodies = {"/metrics": PROCESS + engine.text(), "/labelled": labelled.text()}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            body = bodies.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(5)


def _target(cluster, address: str, path: str) -> ExporterTarget:
    return ExporterTarget.objects.create(
        cluster=cluster,
        name="vllm" + path.replace("/", "-"),
        url=f"http://{address}{path}",
        kind="auto",
        timeout_seconds=5,
    )


@pytest.mark.django_db
def test_a_vllm_target_without_host_labels_is_keyed_by_its_address(cluster, engine_server):
    result = exporter_scrape(target=_target(cluster, engine_server, "/metrics"), now=NOW)

    assert result["ok"], result["error"]
    endpoint = Entity.objects.get(cluster=cluster, kind="serving_endpoint")
    assert endpoint.key == f"llama-3-8b@{engine_server}"
    count = Sample.objects.get(entity=endpoint, metric__name="serving_ttft_seconds_count")
    assert count.value == 20
    assert result["counts"]["refused"].get("no_entity", 0) == 0


@pytest.mark.django_db
def test_the_expositions_own_instance_label_wins_over_the_target_address(cluster, engine_server):
    result = exporter_scrape(target=_target(cluster, engine_server, "/labelled"), now=NOW)

    assert result["ok"], result["error"]
    keys = set(Entity.objects.filter(kind="serving_endpoint").values_list("key", flat=True))
    assert keys == {"qwen-7b@gpu-07:8000"}


@pytest.mark.django_db
def test_a_binding_to_the_target_address_names_the_scraped_endpoint(
    cluster, workloads, engine_server
):
    exporter_scrape(target=_target(cluster, engine_server, "/metrics"), now=NOW)
    workload = workloads["chat"]
    workload.kind = workload.Kind.INFERENCE
    workload.save()

    binding = serving_binding_create(
        workload_id=workload.pk, model_name="llama-3-8b", instance=engine_server
    )

    assert Entity.objects.filter(kind="serving_endpoint", key=binding.key_prefix).exists()
    hint = str(ServingBinding._meta.get_field("instance").help_text)
    assert "host:port of the scraped target" in hint and "node" in hint


@pytest.mark.parametrize(
    ("url", "instance"),
    [
        ("http://10.0.0.7:8000/metrics", "10.0.0.7:8000"),
        ("https://vllm.example.com/metrics", "vllm.example.com"),
        ("http://user:secret@10.0.0.7:8000/metrics", "10.0.0.7:8000"),
        ("http://[fd00::7]:8000/metrics", "[fd00::7]:8000"),
    ],
)
def test_the_instance_is_the_urls_host_and_port_without_credentials(url, instance):
    assert target_instance(url) == instance
