"""PromQL as a data source, against a real Prometheus scraping fixture exporters: a down or
slow server is "data source unavailable". What every figure reads on a PromQL source (and on
the store) is tested by ``test_read_backends_live``."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from django.urls import reverse

from inventory.models import Cluster
from telemetry import read
from telemetry.models import PromQLDataSource
from telemetry.receivers.twin import catalogue_sync
from tests.servers import (
    free_port,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
UTIL = "accelerator_utilization_ratio"


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    """The test's Prometheus listens on loopback, which the outbound policy refuses unless an
    operator allow-lists it (OUTBOUND_ALLOWED_NETWORKS)."""
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


def _silent_server() -> tuple[socket.socket, int]:
    """Accepts connections and never answers: a hung query server."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held = []
    threading.Thread(
        target=lambda: [held.append(sock.accept()) for _ in range(8)], daemon=True
    ).start()
    return sock, sock.getsockname()[1]


@pytest.mark.parametrize("failure", ["down", "slow", "error"])
def test_a_down_slow_or_failing_server_is_data_source_unavailable(
    failure, db, client_as, prometheus_required
):
    catalogue_sync()
    cluster = Cluster.objects.create(name="thanos-b", kind=Cluster.Kind.UNIFIED)
    sock = None
    if failure == "down":
        url = f"http://127.0.0.1:{free_port()}"
    elif failure == "slow":
        sock, port = _silent_server()
        url = f"http://127.0.0.1:{port}"
    else:
        url = "http://127.0.0.1:1/nothing"
    PromQLDataSource.objects.create(cluster=cluster, url=url, timeout_seconds=0.5)
    try:
        started = time.monotonic()
        with pytest.raises(read.DataSourceUnavailable) as caught:
            read.latest_kind(cluster.id, "accelerator", [UTIL])
        assert time.monotonic() - started < 5
        assert "thanos-b" in str(caught.value)
        operator = client_as("operator")
        api = operator.get(reverse("api:dashboard-hardware"), {"cluster": cluster.name})
        assert api.status_code == 503, api.content
        assert api.json()["code"] == "data_source_unavailable"
        assert "Data source unavailable for cluster thanos-b" in api.json()["detail"]
        source = PromQLDataSource.objects.get(cluster=cluster)
        assert source.last_error and source.last_error_at
        exporters_page = operator.get("/exporters/")
        assert "data source unavailable" in exporters_page.content.decode()
    finally:
        if sock is not None:
            sock.close()
