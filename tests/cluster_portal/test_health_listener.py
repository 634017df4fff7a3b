"""``/healthz`` answers at once while every web worker is busy (issue 31 §8).

With the prescribed two web workers, 30 read clients made ``/healthz`` wait 12.8 s at the
median. The gunicorn master now answers liveness on ``PORTAL_HEALTH_BIND`` from its own thread
(cluster_portal/gunicorn_conf.py). Replayed: 30 clients keep every worker thread busy on
dashboards whose PromQL source trickles; the main port's ``/healthz`` waits behind them, the
health listener's does not. Figures are printed for BENCHMARKS.md, bounds kept loose.
"""

from __future__ import annotations

import os
import statistics
import threading
import time

import pytest
import requests

from accounts.services.tokens import token_create
from inventory.models import Cluster
from telemetry.models import PromQLDataSource
from tests.servers import TricklingServer, WebServer, free_port
from tests.workers import database_url_for_subprocess


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_masters_health_listener_answers_within_a_second_while_30_clients_hold_the_workers(
    tmp_path, users, capsys
):
    source = TricklingServer(mode="body", interval=1.0, content_type="application/json")
    cluster = Cluster.objects.create(name="busy-web", kind=Cluster.Kind.UNIFIED)
    PromQLDataSource.objects.create(cluster=cluster, url=source.url, timeout_seconds=60)
    token = token_create(
        name="reader", scopes=["read"], created_by=users["operator"], owner=users["operator"]
    ).plaintext
    health_port = free_port()
    web = WebServer(
        env={
            "DATABASE_URL": database_url_for_subprocess(),
            "PORTAL_VAR_DIR": str(tmp_path),
            "REDIS_URL": os.environ.get("REDIS_URL", ""),
            "OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8",
            "PROMQL_WEB_BUDGET_SECONDS": "6",
            "DASHBOARD_CACHE_SECONDS": "0",
            "PORTAL_HEALTH_BIND": f"127.0.0.1:{health_port}",
        },
        workers=2,
        threads=2,
        extra_args=("-c", "python:cluster_portal.gunicorn_conf"),
    )
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                requests.get(
                    web.url + "/api/v1/dashboards/hardware/",
                    params={"cluster": cluster.name},
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=60,
                )
            except requests.RequestException:
                pass

    listener_seconds: list[float] = []
    main_seconds: list[float] = []
    try:
        requests.get(web.url + "/healthz", timeout=30)  # the workers have loaded the app
        clients = [threading.Thread(target=reader, daemon=True) for _ in range(30)]
        for client in clients:
            client.start()
        time.sleep(2.0)  # every worker thread is inside a slow read now
        main = threading.Thread(
            target=lambda: main_seconds.append(_timed(web.url + "/healthz")), daemon=True
        )
        main.start()
        for _ in range(10):
            listener_seconds.append(_timed(f"http://127.0.0.1:{health_port}/healthz"))
            time.sleep(0.3)
        main.join(30)
        answer = requests.get(f"http://127.0.0.1:{health_port}/healthz", timeout=5)
    finally:
        stop.set()
        web.stop()
        source.stop()
    assert answer.status_code == 200 and answer.json()["workers"] == 2
    median = statistics.median(listener_seconds)
    assert max(listener_seconds) < 1.0, listener_seconds
    with capsys.disabled():
        print(
            f"\n[health] 30 clients on 2 workers x 2 threads: the master's /healthz median "
            f"{1000 * median:.1f} ms, max {1000 * max(listener_seconds):.1f} ms; the main port's "
            f"/healthz took {main_seconds[0] if main_seconds else float('nan'):.1f} s"
        )


def _timed(url: str) -> float:
    began = time.monotonic()
    requests.get(url, timeout=30).raise_for_status()
    return time.monotonic() - began


def test_without_a_health_bind_the_config_starts_no_listener():
    from cluster_portal import gunicorn_conf

    class Server:
        pass

    if not gunicorn_conf.HEALTH_BIND:
        gunicorn_conf.when_ready(Server())
        assert not hasattr(Server, "portal_health_listener")
