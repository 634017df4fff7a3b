"""Scrape mode against a real local HTTP server: success, each failure kind, the beat fan-out,
the claim that stops double scrapes, the admin action and the operator page.

The server binds 127.0.0.1 on an ephemeral port; nothing here leaves the machine.
"""

from __future__ import annotations

import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import connection

from inventory.models import Accelerator, Node
from telemetry.models import EntityKind, ExporterTarget, Sample
from telemetry.receivers.scrape import exporter_scrape, exporter_target_claim
from telemetry.tasks import scrape_due_targets, scrape_target
from tests.access import PageAccessCases


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    """These tests run their exporter/receiver on 127.0.0.1: allow-list it explicitly, as an
    operator would (OUTBOUND_ALLOWED_NETWORKS); by default loopback is refused."""
    settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


NOW = 1_780_000_000.0  # a fixed scrape time, so sample timestamps are predictable

# dcgm-exporter as it prints itself (docs/architecture.md §5): no timestamps, both label spellings,
# whitespace inside a label set, a blank/not-supported sentinel, a DCGM_FI_PROF_* ratio.
DCGM = """# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-aaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 87
DCGM_FI_DEV_GPU_UTIL{gpu="1", UUID="GPU-bbb", device="nvidia1", modelName="NVIDIA H100 80GB HBM3", Hostname="dgx-01"} 12
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",uuid="GPU-aaa",modelName="NVIDIA H100 80GB HBM3",hostname="dgx-01"} 61
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-bbb",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 9223372036854775794
# TYPE DCGM_FI_PROF_PIPE_TENSOR_ACTIVE gauge
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu="0",UUID="GPU-aaa",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-01"} 0.41
"""

# Ascend npu-exporter: millisecond timestamps, -1 = collection failed, no host label.
NPU = """# HELP npu_chip_info_health_status whether the npu chip is healthy
# TYPE npu_chip_info_health_status gauge
npu_chip_info_health_status{id="0",model_name="Ascend910B",vdie_id="VD-0"} 1 1764400000000
npu_chip_info_health_status{id="1",model_name="Ascend910B",vdie_id="VD-1"} 0 1764400000000
# TYPE npu_chip_info_utilization gauge
npu_chip_info_utilization{id="0",model_name="Ascend910B",vdie_id="VD-0"} 55 1764400000000
npu_chip_info_utilization{id="1",model_name="Ascend910B",vdie_id="VD-1"} -1 1764400000000
# TYPE machine_npu_nums gauge
machine_npu_nums 8 1764400000000"""

# Valid lines first, then a broken label set on line 4: nothing of it may be stored.
MALFORMED = """# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-aaa",Hostname="dgx-01"} 87
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-aaa",Hostname="dgx-01" 61
"""


class FakeExporters:
    """What the server answers per path, and what it was asked."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []  # (path, Accept header)
        self.release = threading.Event()  # lets a hanging handler finish at teardown
        self.base_url = ""

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def hits(self, path: str) -> int:
        return sum(1 for p, _ in self.requests if p == path)


def _handler_for(state: FakeExporters) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            state.requests.append((self.path, self.headers.get("Accept", "")))
            if self.path == "/dcgm":
                self._send(200, DCGM.encode())
            elif self.path == "/npu":
                self._send(200, NPU.encode())
            elif self.path == "/unavailable":
                self._send(503, b"exporter is restarting\n")
            elif self.path == "/hang":
                state.release.wait(10)  # far beyond the target's 0.5 s timeout
                self._send(200, DCGM.encode())
            elif self.path == "/malformed":
                self._send(200, MALFORMED.encode())
            elif self.path == "/not-utf8":
                self._send(200, 'npu_chip_info_power{id="0"} 1 # température'.encode("latin-1"))
            else:
                self._send(404, b"not found\n")

        def _send(self, status: int, body: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (the timeout case)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def exporters():
    state = FakeExporters()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(state))
    server.daemon_threads = True
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def refused_url() -> str:
    """A 127.0.0.1 port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/metrics"


def make_target(cluster, url: str, **fields) -> ExporterTarget:
    fields.setdefault("name", "t-" + url.rsplit("/", 1)[-1])
    fields.setdefault("timeout_seconds", 0.5)
    return ExporterTarget.objects.create(cluster=cluster, url=url, **fields)


def scrape_samples(target: ExporterTarget, metric: str) -> list[float]:
    return list(
        Sample.objects.filter(
            metric__name=metric,
            entity__kind=EntityKind.EXPORTER,
            entity__key=target.name,
            entity__cluster=target.cluster,
        )
        .order_by("ts")
        .values_list("value", flat=True)
    )


def exposition_sample_count() -> int:
    """Samples other than the scrape's own up/duration pair."""
    return Sample.objects.exclude(metric__name__startswith="exporter_scrape_").count()


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


# --- success -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_dcgm_scrape_stores_samples_registers_gpus_and_records_success(cluster, exporters):
    target = make_target(cluster, exporters.url("/dcgm"), kind="dcgm")

    result = exporter_scrape(target=target, now=NOW)

    assert result["ok"] is True and result["error"] == ""
    assert exporters.hits("/dcgm") == 1
    assert "text/plain" in exporters.requests[0][1]
    node = Node.objects.get(cluster=cluster, hostname="dgx-01")
    assert node.registered_by_exporter
    assert set(Accelerator.objects.filter(node=node).values_list("vendor_id", "index")) == {
        ("GPU-aaa", 0),
        ("GPU-bbb", 1),
    }
    util = Sample.objects.get(metric__name="accelerator_utilization_ratio", entity__key="GPU-aaa")
    assert util.value == pytest.approx(0.87)
    assert util.ts == at(NOW)  # dcgm-exporter sends no timestamps: the scrape time is used
    temp = Sample.objects.get(metric__name="accelerator_temperature_celsius")
    assert temp.value == 61 and temp.entity.key == "GPU-aaa"  # lower-case label spelling

    target.refresh_from_db()
    assert target.last_success_at == at(NOW)
    assert target.last_attempt_at == at(NOW)
    assert target.last_error_at is None and target.last_error == ""
    assert target.consecutive_failures == 0
    assert target.last_counts["accepted"] == 4  # 2 util + temp + the kept PROF ratio
    assert target.last_counts["mapped"] == 3
    assert target.last_counts["unmapped_kept"] == 1
    assert target.last_counts["dropped"] == {"dcgm_blank_sentinel": 1}
    assert target.last_counts == result["counts"]

    assert scrape_samples(target, "exporter_scrape_up") == [1.0]
    (duration,) = scrape_samples(target, "exporter_scrape_duration_seconds")
    assert 0 < duration < 5


@pytest.mark.django_db
def test_npu_scrape_files_chips_under_the_target_node_with_millisecond_timestamps(
    cluster, exporters
):
    target = make_target(cluster, exporters.url("/npu"), kind="npu", node="atlas-07")

    result = exporter_scrape(target=target, now=NOW)

    assert result["ok"], result
    node = Node.objects.get(cluster=cluster, hostname="atlas-07")
    chips = {a.vendor_id: a.health for a in Accelerator.objects.filter(node=node)}
    assert chips == {"VD-0": 1, "VD-1": 0}
    util = Sample.objects.get(metric__name="accelerator_utilization_ratio")
    assert util.ts == at(1_764_400_000)  # the exporter's ms timestamp, not the scrape time
    assert util.value == pytest.approx(0.55)
    target.refresh_from_db()
    assert target.last_counts["dropped"] == {"npu_collection_failed": 1}


@pytest.mark.django_db
def test_a_repeated_scrape_at_the_same_time_writes_nothing_new(cluster, exporters):
    target = make_target(cluster, exporters.url("/dcgm"), kind="dcgm")
    exporter_scrape(target=target, now=NOW)
    count = Sample.objects.count()

    again = exporter_scrape(target=target, now=NOW)

    assert again["ok"] and again["counts"]["inserted"] == 0
    assert Sample.objects.count() == count


# --- failures ------------------------------------------------------------------------------


FAILURES = [
    pytest.param("/unavailable", "HTTP 503 from {url}", id="http-503"),
    pytest.param("/hang", "timed out after 0.5 s fetching {url}", id="timeout"),
    pytest.param("/malformed", "line 4: ", id="malformed-text"),
    pytest.param("/not-utf8", "response from {url} is not UTF-8", id="not-utf8"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "expected"), FAILURES)
def test_each_failure_is_recorded_and_writes_nothing_of_the_exposition(
    cluster, exporters, path, expected
):
    url = exporters.url(path)
    target = make_target(cluster, url, kind="dcgm")

    started = time.monotonic()
    first = exporter_scrape(target=target, now=NOW)
    elapsed = time.monotonic() - started
    second = exporter_scrape(target=target, now=NOW + 15)

    assert first["ok"] is False and second["ok"] is False
    assert expected.format(url=url) in first["error"]
    target.refresh_from_db()
    assert expected.format(url=url) in target.last_error
    assert "\n" not in target.last_error
    assert target.consecutive_failures == 2
    assert target.last_error_at == at(NOW + 15)
    assert target.last_attempt_at == at(NOW + 15)
    assert target.last_success_at is None and target.last_counts == {}
    # Nothing of the exposition: no samples, no nodes or accelerators registered.
    assert exposition_sample_count() == 0
    assert not Node.objects.exists() and not Accelerator.objects.exists()
    assert scrape_samples(target, "exporter_scrape_up") == [0.0, 0.0]
    assert len(scrape_samples(target, "exporter_scrape_duration_seconds")) == 2
    if path == "/hang":
        assert elapsed < 3, "the timeout must bound the scrape"


@pytest.mark.django_db
def test_a_refused_connection_is_recorded(cluster, refused_url):
    target = make_target(cluster, refused_url)

    result = exporter_scrape(target=target, now=NOW)

    assert result["ok"] is False
    target.refresh_from_db()
    assert target.last_error == f"connection refused by {refused_url}"
    assert target.consecutive_failures == 1
    assert scrape_samples(target, "exporter_scrape_up") == [0.0]
    assert exposition_sample_count() == 0


@pytest.mark.django_db
def test_failure_keeps_the_last_success_and_success_resets_the_failure_count(cluster, exporters):
    target = make_target(cluster, exporters.url("/dcgm"), kind="dcgm")
    exporter_scrape(target=target, now=NOW)
    counts = ExporterTarget.objects.get(pk=target.pk).last_counts

    ExporterTarget.objects.filter(pk=target.pk).update(url=exporters.url("/unavailable"))
    target.refresh_from_db()
    exporter_scrape(target=target, now=NOW + 15)
    target.refresh_from_db()
    assert target.consecutive_failures == 1
    assert target.last_success_at == at(NOW) and target.last_counts == counts
    assert target.last_error.startswith("HTTP 503 from ")

    ExporterTarget.objects.filter(pk=target.pk).update(url=exporters.url("/dcgm"))
    target.refresh_from_db()
    exporter_scrape(target=target, now=NOW + 30)
    target.refresh_from_db()
    assert target.consecutive_failures == 0
    assert target.last_success_at == at(NOW + 30)
    assert scrape_samples(target, "exporter_scrape_up") == [1.0, 0.0, 1.0]


# --- beat fan-out and the claim ------------------------------------------------------------


@pytest.mark.django_db
def test_scrape_due_targets_dispatches_only_due_enabled_targets(cluster, monkeypatch):
    from django.utils import timezone

    now = timezone.now()
    never = make_target(cluster, "http://127.0.0.1:9/a", name="never")
    overdue = make_target(
        cluster, "http://127.0.0.1:9/b", name="overdue", last_attempt_at=now - timedelta(seconds=60)
    )
    make_target(
        cluster, "http://127.0.0.1:9/c", name="recent", last_attempt_at=now - timedelta(seconds=3)
    )
    make_target(cluster, "http://127.0.0.1:9/d", name="disabled", enabled=False)
    make_target(
        cluster,
        "http://127.0.0.1:9/e",
        name="slow-interval",
        interval_seconds=300,
        last_attempt_at=now - timedelta(seconds=60),
    )
    dispatched: list[int] = []
    monkeypatch.setattr(scrape_target, "delay", dispatched.append)

    result = scrape_due_targets()

    assert sorted(dispatched) == sorted([never.pk, overdue.pk])
    assert result == {"dispatched": 2}


@pytest.mark.django_db
def test_beat_fan_out_runs_the_scrapes_end_to_end(cluster, exporters, monkeypatch):
    ok = make_target(cluster, exporters.url("/dcgm"), kind="dcgm", name="ok")
    bad = make_target(cluster, exporters.url("/unavailable"), name="bad")
    make_target(cluster, exporters.url("/npu"), name="off", enabled=False)
    # Eager: run each dispatched task in this process, as a worker would.
    monkeypatch.setattr(scrape_target, "delay", lambda tid: scrape_target.apply(args=(tid,)).get())

    scrape_due_targets()

    assert exporters.hits("/dcgm") == 1 and exporters.hits("/unavailable") == 1
    assert exporters.hits("/npu") == 0
    ok.refresh_from_db()
    bad.refresh_from_db()
    assert ok.last_success_at is not None and ok.consecutive_failures == 0
    assert bad.consecutive_failures == 1 and bad.last_error.startswith("HTTP 503")

    # Right after, nothing is due: a second beat scrapes nothing.
    scrape_due_targets()
    assert len(exporters.requests) == 2


@pytest.mark.django_db
def test_the_claim_lets_only_one_of_two_workers_scrape(cluster, exporters):
    from django.utils import timezone

    target = make_target(cluster, exporters.url("/dcgm"), kind="dcgm")
    now = timezone.now()

    # Both workers were dispatched for the same due target and loaded it as due.
    first = exporter_target_claim(target_id=target.pk, now=now)
    second = exporter_target_claim(target_id=target.pk, now=now + timedelta(seconds=0.2))

    assert first is not None and second is None
    assert ExporterTarget.objects.get(pk=target.pk).last_attempt_at == now
    # Once the scrape has recorded its outcome, one interval later it is due again.
    exporter_scrape(target=first, now=now.timestamp())
    later = now + timedelta(seconds=target.interval_seconds)
    assert exporter_target_claim(target_id=target.pk, now=later) is not None


@pytest.mark.django_db
def test_a_target_whose_scrape_is_still_in_flight_is_not_claimed_again(cluster, monkeypatch):
    from django.utils import timezone

    from telemetry.read.local.exporters import exporter_targets_due
    from telemetry.receivers.scrape import SCRAPE_TIME_LIMIT_SECONDS

    target = make_target(cluster, "http://127.0.0.1:9/stuck", interval_seconds=5)
    now = timezone.now()
    assert exporter_target_claim(target_id=target.pk, now=now) is not None
    # The scrape hangs: interval after interval, nobody else claims it nor is it dispatched.
    for seconds in (5, 10, 30, SCRAPE_TIME_LIMIT_SECONDS - 1):
        moment = now + timedelta(seconds=seconds)
        assert exporter_targets_due(now=moment) == []
        assert exporter_target_claim(target_id=target.pk, now=moment) is None
    # A worker killed mid-scrape never records an outcome: the lease lapses with the task's
    # hard time limit and the target is scraped again.
    lapsed = now + timedelta(seconds=SCRAPE_TIME_LIMIT_SECONDS)
    assert exporter_targets_due(now=lapsed) == [target.pk]
    assert exporter_target_claim(target_id=target.pk, now=lapsed) is not None


@pytest.mark.django_db
def test_recording_the_outcome_ends_the_lease(cluster, refused_url):
    from django.utils import timezone

    target = make_target(cluster, refused_url)
    claimed = exporter_target_claim(target_id=target.pk, now=timezone.now())
    assert claimed.scrape_lease_until is not None
    exporter_scrape(target=claimed)
    target.refresh_from_db()
    assert target.scrape_lease_until is None and target.consecutive_failures == 1


@pytest.mark.django_db
def test_two_scrape_tasks_for_one_target_fetch_it_once(cluster, exporters):
    target = make_target(cluster, exporters.url("/dcgm"), kind="dcgm")

    first = scrape_target.apply(args=(target.pk,)).get()
    second = scrape_target.apply(args=(target.pk,)).get()

    assert first["ok"] is True
    assert second == {"target_id": target.pk, "skipped": True}
    assert exporters.hits("/dcgm") == 1
    assert scrape_samples(target, "exporter_scrape_up") == [1.0]


@pytest.mark.django_db
def test_a_disabled_or_deleted_target_is_not_claimed(cluster):
    target = make_target(cluster, "http://127.0.0.1:9/x", enabled=False)
    assert exporter_target_claim(target_id=target.pk) is None
    assert exporter_target_claim(target_id=target.pk + 1000) is None
    assert ExporterTarget.objects.get(pk=target.pk).last_attempt_at is None


@pytest.mark.django_db(transaction=True)
def test_concurrent_claims_from_two_connections_have_one_winner(cluster):
    """Two threads (two database connections) race for the same due target."""
    target = make_target(cluster, "http://127.0.0.1:9/race")
    barrier = threading.Barrier(2)
    winners: list[bool] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait(5)
            winners.append(exporter_target_claim(target_id=target.pk) is not None)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    assert not errors, errors
    assert sorted(winners) == [False, True]


# --- admin action --------------------------------------------------------------------------


@pytest.mark.django_db
def test_admin_scrape_now_runs_the_scrape_and_reports_it(client, cluster, exporters):
    from accounts.models import User

    admin_user = User.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin_user)
    good = make_target(cluster, exporters.url("/dcgm"), kind="dcgm", name="good")
    bad = make_target(cluster, exporters.url("/unavailable"), name="bad")

    response = client.post(
        "/admin/telemetry/exportertarget/",
        {"action": "scrape_now", "_selected_action": [good.pk, bad.pk]},
        follow=True,
    )

    assert response.status_code == 200
    texts = [str(m) for m in response.context["messages"]]
    assert any(t.startswith("good: scraped in") and "4 samples accepted" in t for t in texts)
    assert any(t.startswith("bad: scrape failed: HTTP 503 from ") for t in texts), texts
    good.refresh_from_db()
    assert good.last_success_at is not None


# --- operator page -------------------------------------------------------------------------


class TestExportersPageAccess(PageAccessCases):
    url = "/exporters/"
    allowed_roles = ("operator", "approver")


@pytest.mark.django_db
def test_exporters_page_shows_the_last_error_and_each_state(client_as, cluster, exporters):
    ok = make_target(cluster, exporters.url("/dcgm"), kind="dcgm", name="gpu-rack-1")
    failing = make_target(cluster, exporters.url("/unavailable"), name="npu-rack-2")
    make_target(cluster, exporters.url("/npu"), name="npu-new")
    make_target(cluster, exporters.url("/npu"), name="npu-off", enabled=False)
    exporter_scrape(target=ok)
    exporter_scrape(target=failing)
    failing.refresh_from_db()

    response = client_as("operator").get("/exporters/")

    assert response.status_code == 200
    html = response.content.decode()
    assert failing.last_error in html
    assert f"HTTP 503 from {exporters.url('/unavailable')}" in html
    assert "1 failure in a row" in html
    for label in ("gpu-rack-1", "npu-rack-2", "npu-new", "npu-off"):
        assert label in html
    states = {row.target.name: row.state for row in response.context["rows"]}
    assert states == {
        "gpu-rack-1": "ok",
        "npu-rack-2": "failing",
        "npu-new": "never",
        "npu-off": "disabled",
    }
    for text in ("never scraped", "disabled", "failing", "/admin/telemetry/exportertarget/"):
        assert text in html
