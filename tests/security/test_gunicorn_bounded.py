"""Oversized pushes against a real gunicorn never kill a worker (issue 15 §4).

Before: a 50 MiB line drove a web worker to 3.1 GiB and a SIGKILL, 100k series killed one
too. Now a declared body over ``INGEST_MAX_BODY_BYTES`` is refused before it is read, a
chunked one as soon as it passes the limit, and everything under the limit is parsed within
the line and series caps. The workers' PIDs are the same afterwards and their peak memory
(VmHWM) stays bounded; the figure is printed for the record.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import requests

from accounts.services.tokens import token_create
from inventory.models import Cluster
from tests.servers import WebServer
from tests.workers import database_url_for_subprocess

MIB = 1024 * 1024
URL = "/api/v1/telemetry/prometheus/?cluster=gunicorn-bounds&source=dcgm"


def workers_of(pid: int) -> dict[int, int]:
    """``{worker pid: peak RSS in KiB}`` of the gunicorn master ``pid``'s children."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("PPid", "0").strip()) == pid:
            found[int(entry.name)] = int(fields.get("VmHWM", "0 kB").split()[0])
    return found


def chunks(total: int, piece: bytes):
    sent = 0
    while sent < total:
        yield piece
        sent += len(piece)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_oversized_pushes_never_kill_a_gunicorn_worker(tmp_path, capsys):
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to read the workers' memory")
    Cluster.objects.create(name="gunicorn-bounds", kind=Cluster.Kind.UNIFIED)
    token = token_create(name="bounds", scopes=["ingest"]).plaintext
    server = WebServer(
        env={
            "DATABASE_URL": database_url_for_subprocess(),
            "PORTAL_VAR_DIR": str(tmp_path),
            "REDIS_URL": os.environ.get("REDIS_URL", ""),
        },
        workers=2,
        threads=1,
    )
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "text/plain"}
    try:
        deadline = time.monotonic() + 60
        while len(workers_of(server.process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        for _ in range(4):  # each worker has loaded the app
            requests.get(server.url + "/healthz", timeout=30)
        before = workers_of(server.process.pid)
        assert len(before) == 2
        session = requests.Session()
        line = b'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h",note="' + b"x" * MIB
        # 1. A 50 MiB single line with its length declared: refused before it is read.
        declared = session.post(server.url + URL, data=line * 50, headers=headers, timeout=60)
        # 2. 200 MiB chunked (no Content-Length): Django's WSGI request would read none of it;
        #    refused with 411 instead of ingesting an empty body.
        chunked = session.post(
            server.url + URL, data=chunks(200 * MIB, b"#" * MIB), headers=headers, timeout=120
        )
        # 3. Under the body limit, but one 30 MiB line: the line cap answers.
        long_line = session.post(
            server.url + URL, data=b"x" * (30 * MIB), headers=headers, timeout=60
        )
        # 4. 150,000 series: the series cap answers.
        series = b"".join(
            b'DCGM_FI_DEV_GPU_UTIL{gpu="%d",UUID="G-%d",Hostname="h%d"} 1\n' % (i % 8, i, i)
            for i in range(150_000)
        )
        many = session.post(server.url + URL, data=series, headers=headers, timeout=120)
        after = workers_of(server.process.pid)
    finally:
        server.stop()
    assert declared.status_code == 413, (declared.text[:500], server.output[-3000:])
    assert declared.json()["code"] == "payload_too_large"
    assert chunked.status_code == 411 and chunked.json()["code"] == "length_required"
    assert long_line.status_code == 400 and "INGEST_MAX_LINE_BYTES" in long_line.json()["detail"]
    assert many.status_code == 400 and "INGEST_MAX_SERIES" in many.json()["detail"]
    assert set(after) == set(before), server.output  # no worker was killed and replaced
    peak_mib = max(after.values()) / 1024
    with capsys.disabled():
        print(f"\n[gunicorn bounds] worker peak RSS (VmHWM): {peak_mib:.0f} MiB")
    assert peak_mib < 768
