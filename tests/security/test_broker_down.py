"""Commands never answer 500 after they committed (issue 26 §5), with the broker unreachable.

Before: with Redis unreachable ``POST /api/v1/plans/<id>/start/`` answered 500 although the
plan was running (a retry got 409) and its webhook delivery stayed pending for ever;
``POST /api/v1/whatif/`` answered 500 and its run stayed queued for ever. Now the tasks are
sent after commit and a broker error is logged; the periodic sweeps send what never arrived,
and a swept copy of a task that did arrive does no work twice.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from celery import current_app
from django.test import Client
from django.utils import timezone

from rollout.models import MigrationPlan, WebhookDelivery, WebhookSubscription
from rollout.tasks import deliver_webhook
from simulation.models import WhatIfRun
from simulation.tasks import run_whatif
from tests.servers import free_port


@pytest.fixture
def broker_unreachable():
    """The Celery app's broker is a port nobody listens on (a real connection refusal)."""
    original = current_app.conf.broker_url

    def point_at(url: str) -> None:
        if current_app._pool is not None:
            current_app._pool.force_close_all()
        current_app.conf.broker_url = url
        current_app._after_fork()  # forget the pooled connections and producers

    point_at(f"redis://127.0.0.1:{free_port()}/0")
    yield
    point_at(original)


class _Receiver:
    def __init__(self) -> None:
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hits.append(self.headers["X-Portal-Delivery"])
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _later(model, pk: int, seconds: int) -> None:
    """Age a row as if ``seconds`` had passed since it was made (the sweeps' grace)."""
    model.objects.filter(pk=pk).update(created_at=timezone.now() - timedelta(seconds=seconds))


@pytest.mark.django_db(transaction=True)
def test_starting_a_plan_with_the_broker_down_answers_200_and_the_sweep_delivers_once(
    plan_factory, users, settings, broker_unreachable, caplog
):
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    receiver = _Receiver()
    try:
        WebhookSubscription.objects.create(
            name="ops", url=receiver.url, events=["transition"], secret="s3cret"
        )
        plan = plan_factory()
        client = Client(raise_request_exception=False)
        client.force_login(users["operator"])
        with caplog.at_level(logging.WARNING, logger="cluster_portal.web.dispatch"):
            answer = client.post(f"/api/v1/plans/{plan.pk}/start/", content_type="application/json")
        assert answer.status_code == 200, answer.content[:300]
        assert MigrationPlan.objects.get(pk=plan.pk).state == "running"
        assert "could not queue webhook delivery" in caplog.text
        delivery = WebhookDelivery.objects.get()
        assert delivery.status == "pending" and delivery.attempts == 0

        from rollout.tasks import sweep_webhook_deliveries

        # Not yet overdue: the sweep leaves it (its task may still be on the way).
        assert sweep_webhook_deliveries.apply().get()["due"] == 0
        _later(WebhookDelivery, delivery.pk, 600)
        sent: list[int] = []
        deliver_webhook.delay = lambda pk: sent.append(pk)  # the broker is back
        try:
            assert sweep_webhook_deliveries.apply().get() == {"due": 1, "sent": 1}
        finally:
            del deliver_webhook.delay
        assert sent == [delivery.pk]
        # The swept task and a late copy of the original both run: one POST.
        assert deliver_webhook.apply(args=[delivery.pk]).get() == "delivered"
        assert deliver_webhook.apply(args=[delivery.pk]).get() == "delivered"
        assert receiver.hits == [str(delivery.pk)]
        assert sweep_webhook_deliveries.apply().get()["due"] == 0
    finally:
        receiver.close()


WHATIF = {"cards": 64, "hardware": "h100-sxm", "hours": 1, "seed": 3, "trace_kind": ""}


@pytest.mark.django_db(transaction=True)
def test_a_whatif_with_the_broker_down_answers_201_and_the_sweep_runs_it_once(
    users, broker_unreachable, monkeypatch
):
    client = Client(raise_request_exception=False)
    client.force_login(users["operator"])
    answer = client.post("/api/v1/whatif/", WHATIF)
    assert answer.status_code == 201, answer.content[:300]
    run = WhatIfRun.objects.get()
    assert run.status == "queued"

    from simulation.tasks import sweep_whatif_runs

    _later(WhatIfRun, run.pk, 600)
    sent: list[int] = []
    monkeypatch.setattr(run_whatif, "delay", lambda pk: sent.append(pk))
    assert sweep_whatif_runs.apply().get() == {"due": 1, "sent": 1}
    assert sent == [run.pk]
    assert sweep_whatif_runs.apply().get()["due"] == 0  # not re-sent every minute

    from simulation.services import whatif_run

    executions = []
    real = whatif_run.run_series
    monkeypatch.setattr(
        whatif_run, "run_series", lambda *a, **k: executions.append(1) or real(*a, **k)
    )
    # The swept task runs the what-if; the original task, arriving late, finds it done.
    assert run_whatif.apply(args=[run.pk], task_id="swept").get()["status"] == "done"
    steps = len(executions)
    result = WhatIfRun.objects.get(pk=run.pk)
    assert run_whatif.apply(args=[run.pk], task_id="original").get()["status"] == "done"
    assert len(executions) == steps
    again = WhatIfRun.objects.get(pk=run.pk)
    assert again.finished_at == result.finished_at and again.result == result.result
