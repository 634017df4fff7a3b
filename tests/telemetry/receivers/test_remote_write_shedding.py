"""A remote-write request that waited past the sender's timeout answers 503 before doing any
work (Prometheus is already resending it and retries a 5xx); a timely one is stored."""

from __future__ import annotations

import threading
import time

import pytest

from cluster_portal.web import queue_time
from telemetry.models import RemoteWriteStatus, Sample
from tests.telemetry.receivers.test_remote_write import rw_client, send  # noqa: F401 - the fixture
from tests.telemetry.remote_write_helpers import write_request

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def behind_a_proxy(settings):
    # X-Request-Start is honoured only behind a configured proxy (TRUSTED_PROXY_COUNT).
    settings.TRUSTED_PROXY_COUNT = 1


GPU = {"gpu": "0", "UUID": "GPU-shed", "modelName": "NVIDIA H100", "Hostname": "dgx-01"}


def _body() -> bytes:
    now_ms = int(time.time() * 1000)
    return write_request([({"__name__": "DCGM_FI_DEV_GPU_TEMP", **GPU}, [(now_ms, 50)])])


def test_a_request_queued_past_the_senders_timeout_is_shed_with_a_503(rw_client, cluster):  # noqa: F811
    started = f"t={int((time.time() - 45) * 1_000_000)}"  # a proxy's stamp, in microseconds
    response = send(rw_client, _body(), **{"X-Request-Start": started})
    assert response.status_code == 503
    assert response.json()["code"] == "overloaded"
    assert "INGEST_REMOTE_WRITE_SHED_SECONDS" in response.json()["detail"]
    assert response["Retry-After"]
    assert not Sample.objects.exists()  # nothing done: Prometheus resends it


def test_shed_requests_are_counted_on_the_status_page_and_metrics(rw_client, cluster, client_as):  # noqa: F811
    from rest_framework.test import APIClient

    from accounts.services.tokens import token_create

    assert send(rw_client, _body()).status_code == 200  # the cluster's status row exists
    started = f"t={time.time() - 45:.3f}"
    assert send(rw_client, _body(), **{"X-Request-Start": started}).status_code == 503
    status = RemoteWriteStatus.objects.get(cluster=cluster)
    assert (status.requests, status.shed) == (2, 1)
    reader = APIClient()
    reader.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='graf', scopes=['read']).plaintext}"
    )
    metrics = reader.get("/metrics").content.decode()
    assert f'portal_remote_write_shed_requests_total{{cluster="{cluster.name}"}} 1.0' in metrics
    page = client_as("operator").get("/exporters/").content.decode()
    assert "Shed" in page


def test_a_timely_request_is_stored(rw_client, cluster):  # noqa: F811
    started = f"t={time.time() - 2:.3f}"  # seconds, as nginx's $msec
    response = send(rw_client, _body(), **{"X-Request-Start": started})
    assert response.status_code == 200
    assert Sample.objects.count() == 1


def test_shedding_can_be_turned_off(rw_client, cluster, settings):  # noqa: F811
    settings.INGEST_REMOTE_WRITE_SHED_SECONDS = 0
    response = send(rw_client, _body(), **{"X-Request-Start": f"t={time.time() - 300:.0f}"})
    assert response.status_code == 200


def test_without_a_configured_proxy_a_clients_own_stamp_sheds_nothing(rw_client, cluster, settings):  # noqa: F811
    settings.TRUSTED_PROXY_COUNT = 0
    response = send(rw_client, _body(), **{"X-Request-Start": f"t={time.time() - 300:.0f}"})
    assert response.status_code == 200 and Sample.objects.count() == 1


def test_a_stamp_from_the_future_is_ignored():
    assert queue_time.queued_seconds({"HTTP_X_REQUEST_START": f"t={time.time() + 900:.0f}"}) == 0


def test_a_request_for_a_cluster_that_does_not_exist_is_not_shed_nor_counted(rw_client, cluster):  # noqa: F811
    old = f"t={time.time() - 45:.3f}"
    response = send(rw_client, _body(), query="cluster=no-such-cluster", **{"X-Request-Start": old})
    assert 400 <= response.status_code < 500
    assert not RemoteWriteStatus.objects.filter(shed__gt=0).exists()


def test_the_gunicorn_worker_stamps_the_wait_in_its_thread_pool_queue():
    class Conn:
        pass

    class Worker(queue_time.QueueTimedWorker):
        def __init__(self) -> None:  # no gunicorn arbiter: only the two overridden steps
            self.handled: list[float] = []

    worker = Worker()
    conn = Conn()
    # enqueue_req stamps the connection (the pool is gunicorn's; replace it by a direct call)
    worker.tpool = type("Pool", (), {"submit": lambda _self, fn, c: _Done()})()
    worker.method_queue = type("Q", (), {"defer": lambda *a: None})()
    worker.enqueue_req(conn)
    conn.portal_queued_at -= 40  # as if it sat in the queue for 40 s

    def handled(self, c):
        worker.handled.append(queue_time.queued_seconds({}))

    original = queue_time.ThreadWorker.handle
    queue_time.ThreadWorker.handle = handled
    try:
        thread = threading.Thread(target=worker.handle, args=(conn,))
        thread.start()
        thread.join()
    finally:
        queue_time.ThreadWorker.handle = original
    assert worker.handled and worker.handled[0] == pytest.approx(40, abs=2)
    assert queue_time.queued_seconds({}) == 0.0  # not leaked to the next request


class _Done:
    def add_done_callback(self, fn) -> None:
        pass
