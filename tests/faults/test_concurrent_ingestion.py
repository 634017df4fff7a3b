"""20 ingestion clients at once against a real gunicorn, retrying: every sample stored once.

Each client POSTs its batches with one Idempotency-Key per batch. Some batches are sent twice
on purpose; for others the client gives up after a few milliseconds (the server carries on
with the request) and retries, so a retry often races its own original. Clients share
entities, so entity registration is contended too.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter

import pytest
import requests

from accounts.services.tokens import token_create
from inventory.models import Cluster
from telemetry.models import IngestionBatch, Sample
from telemetry.receivers.twin import catalogue_sync
from tests.servers import WebServer
from tests.workers import database_url_for_subprocess

CLIENTS = 20
BATCHES = 5
SAMPLES = 40
BASE_TS = 1_780_000_000
URL = "/api/v1/telemetry/samples/"


def batch_for(client: int, batch: int) -> list[dict]:
    return [
        {
            "metric": "accelerator_utilization_ratio",
            "cluster": "ingest-fault",
            "entity_kind": "accelerator",
            # Five clients share each node's entities: registration races across clients.
            "entity": f"n{client % 4}/{j % 8}",
            "ts": BASE_TS + client * 10_000 + batch * 100 + j,
            "value": (client * 7 + batch * 3 + j) % 100 / 100,
        }
        for j in range(SAMPLES)
    ]


class Client(threading.Thread):
    def __init__(self, index: int, base_url: str, token: str, start: threading.Barrier) -> None:
        super().__init__(daemon=True)
        self.index, self.base_url, self.start_line = index, base_url, start
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.statuses: Counter = Counter()
        self.final: list[tuple[int, dict, bool]] = []
        self.error: BaseException | None = None

    def post(self, batch: list[dict], key: str, timeout) -> requests.Response:
        return self.session.post(
            self.base_url + URL,
            json={"samples": batch},
            headers={"Idempotency-Key": key},
            timeout=timeout,
        )

    def until_stored(self, batch: list[dict], key: str) -> requests.Response:
        for _attempt in range(10):
            try:
                response = self.post(batch, key, timeout=(5, 60))
            except requests.RequestException as exc:
                self.statuses[type(exc).__name__] += 1
                continue
            self.statuses[response.status_code] += 1
            if response.status_code in (200, 201):
                return response
            if response.status_code < 500 and response.status_code != 429:
                raise AssertionError(f"{response.status_code}: {response.text[:300]}")
        raise AssertionError(f"batch {key} not stored after 10 attempts: {self.statuses}")

    def run(self) -> None:
        try:
            self.start_line.wait(30)
            for b in range(BATCHES):
                batch, key = batch_for(self.index, b), f"c{self.index}-b{b}-{uuid.uuid4().hex}"
                mode = (self.index + b) % 3
                if mode == 1:  # drop the connection almost at once, then retry
                    try:
                        first = self.post(batch, key, timeout=(5, 0.005))
                        self.statuses[first.status_code] += 1
                    except requests.RequestException as exc:
                        self.statuses[type(exc).__name__] += 1
                response = self.until_stored(batch, key)
                if mode == 0:  # a client that did not see the answer sends it again
                    response = self.until_stored(batch, key)
                    assert response.headers.get("Idempotent-Replayed") == "true"
                self.final.append(
                    (
                        response.status_code,
                        response.json(),
                        response.headers.get("Idempotent-Replayed") == "true",
                    )
                )
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            self.session.close()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_twenty_retrying_clients_store_every_sample_exactly_once(tmp_path, private_redis):
    catalogue_sync()
    cluster = Cluster.objects.create(name="ingest-fault", kind=Cluster.Kind.UNIFIED)
    token = token_create(name="ingest-fault", scopes=["ingest"]).plaintext
    server = WebServer(
        env={
            "DATABASE_URL": database_url_for_subprocess(),
            "CELERY_BROKER_URL": private_redis.url,
            "PORTAL_VAR_DIR": str(tmp_path),
        }
    )
    try:
        start = threading.Barrier(CLIENTS)
        clients = [Client(i, server.url, token, start) for i in range(CLIENTS)]
        for client in clients:
            client.start()
        for client in clients:
            client.join(120)
    finally:
        server.stop()

    errors = [(c.index, c.error) for c in clients if c.error is not None]
    assert not errors, (errors, server.output[-3000:])
    statuses = sum((c.statuses for c in clients), Counter())
    print(f"responses and client-side errors: {dict(statuses)}")
    assert not [s for s in statuses if isinstance(s, int) and s >= 500], server.output[-3000:]
    assert statuses["ReadTimeout"] > 0  # connections really were dropped mid-request

    # Every batch ran once; every answer, replayed or not, is the first one.
    finals = [f for c in clients for f in c.final]
    assert len(finals) == CLIENTS * BATCHES
    assert all(
        body == {"accepted": SAMPLES, "inserted": SAMPLES, "duplicates": 0} for _, body, _ in finals
    )
    assert sum(replayed for *_, replayed in finals) >= CLIENTS * BATCHES // 3
    assert IngestionBatch.objects.count() == CLIENTS * BATCHES

    distinct = {
        (s["entity"], s["ts"])
        for i in range(CLIENTS)
        for b in range(BATCHES)
        for s in batch_for(i, b)
    }
    assert len(distinct) == CLIENTS * BATCHES * SAMPLES
    stored = Sample.objects.filter(entity__cluster=cluster)
    assert stored.count() == len(distinct)
    assert stored.values("entity", "ts").distinct().count() == len(distinct)
