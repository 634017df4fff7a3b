"""Benchmark: a real Prometheus remote-writing a 10,240-card dcgm-exporter fleet to gunicorn.

Debian's ``prometheus`` (2.42, **default queue settings**) scrapes 1,280 synthetic
dcgm-exporter targets (8 H100s each, 22 fields, the labels dcgm-exporter sends; one HTTP
server, one ``__metrics_path__`` per host) every 15 s — 225,280 samples per round, ~15,000
samples/s — and remote-writes them to ``/api/v1/telemetry/remote-write/`` on gunicorn over
PostgreSQL. After a warm-up (the first rounds register the cards), it measures for
``--minutes``:

- samples stored per second (the receiver's ``inserted`` counter) and the duplicates skipped;
- Prometheus' own counters: ``prometheus_remote_storage_samples_{total,failed_total,
  retried_total,dropped_total}``, ``_samples_pending``, shards (current, desired, max seen),
  the send lag (newest sample appended − newest sample sent), p95 of
  ``sent_batch_duration_seconds``;
- p95 of the portal's request time (gunicorn's access log, ``%(L)s``);
- the load: load average and the CPU seconds of gunicorn, Prometheus and PostgreSQL;
- then, in the same run, raw psycopg COPY of as many rows into the sample table (the
  ceiling): the ratio receiver ÷ COPY.

Run: ``python bench/bench_remote_write.py [--minutes 10] [--workers 3]`` (needs PostgreSQL on
127.0.0.1 and the ``prometheus`` binary). The database ``bench_remote_write`` is reused and
emptied at the start (so a stuck ``DROP DATABASE`` elsewhere on a shared server cannot block it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _dcgm_fleet as fleet  # noqa: E402
from _common import ROOT, django_setup, fresh_postgres, write_result  # noqa: E402

from tests.servers import ExporterFixture, PrometheusServer, free_port  # noqa: E402

SCRAPE_INTERVAL = 15
PROM = "prometheus_remote_storage_"


def _prom_metrics(url: str) -> dict[str, float]:
    """Prometheus' own /metrics, summed over label sets per name (one remote-write queue)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        text = response.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith(PROM) and not line.startswith("prometheus_tsdb_head_samples"):
            continue
        name_labels, _, value = line.rpartition(" ")
        name = name_labels.split("{", 1)[0]
        if name.endswith("_bucket"):
            le = re.search(r'le="([^"]+)"', name_labels).group(1)
            name = f"{name}:{le}"
        out[name] = out.get(name, 0.0) + float(value)
    return out


def _targets_up(url: str) -> int | None:
    """How many scrape targets were up at the last scrape (an overloaded exporter is not)."""
    query = urllib.parse.urlencode({"query": "sum(up)"})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=10) as response:
            result = json.loads(response.read())["data"]["result"]
    except OSError:
        return None
    return int(float(result[0]["value"][1])) if result else 0


def _hist_p95(before: dict, after: dict, base: str) -> float | None:
    buckets = sorted(
        (float(k.split(":", 1)[1]), after[k] - before.get(k, 0.0))
        for k in after
        if k.startswith(f"{base}_bucket:")
    )
    if not buckets or buckets[-1][1] <= 0:
        return None
    total = buckets[-1][1]
    for le, count in buckets:
        if count >= 0.95 * total:
            return le
    return None


def _cpu_seconds(pids: list[int]) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


def _children(pid: int) -> list[int]:
    found = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _postgres_pids() -> list[int]:
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if proc.joinpath("comm").read_text().strip() == "postgres":
                pids.append(int(proc.name))
        except OSError:
            pass
    return pids


def _log_lines(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _p95_request_seconds(log: Path, skip: int) -> tuple[float | None, int, dict[str, int]]:
    """p95 of the request times gunicorn logged after line ``skip`` (format: ``L status``)."""
    times, statuses = [], {}
    for line in log.read_text().splitlines()[skip:]:
        parts = line.split()
        if len(parts) != 2:
            continue
        times.append(float(parts[0]))
        statuses[parts[1]] = statuses.get(parts[1], 0) + 1
    if not times:
        return None, 0, statuses
    times.sort()
    return times[int(0.95 * (len(times) - 1))], len(times), statuses


def _scrape_config(
    port: int, hosts: int, url: str, token: str, max_samples_per_send: int | None = None
) -> str:
    targets = "\n".join(
        f'      - targets: ["127.0.0.1:{port}"]\n'
        f'        labels: {{__metrics_path__: "/metrics/{fleet.hostname(h)}", '
        f'instance: "{fleet.hostname(h)}:9400"}}'
        for h in range(hosts)
    )
    return f"""
global:
  scrape_interval: {SCRAPE_INTERVAL}s
  scrape_timeout: 10s
  evaluation_interval: 1m
scrape_configs:
  - job_name: dcgm
    static_configs:
{targets}
remote_write:
  - url: "{url}"
    authorization:
      type: Bearer
      credentials: "{token}"
""" + (
        f"    queue_config:\n      max_samples_per_send: {max_samples_per_send}\n"
        if max_samples_per_send
        else ""
    )


def _status(cluster_name: str) -> dict:
    from telemetry.models import RemoteWriteStatus

    row = RemoteWriteStatus.objects.filter(cluster__name=cluster_name).first()
    if row is None:
        return {"requests": 0, "inserted": 0, "duplicates": 0, "samples": 0, "dropped": 0}
    return {
        "requests": row.requests,
        "inserted": row.inserted,
        "duplicates": row.duplicates,
        "samples": row.samples,
        "dropped": row.dropped,
        "rejected": row.rejected,
        "last_error": row.last_error,
        "last_counts": row.last_counts,
    }


def _copy_rate(url: str, rows_total: int, batch: int) -> float:
    """Raw psycopg COPY of ``rows_total`` rows in batches of ``batch`` (one commit each)."""
    import psycopg

    from telemetry.models import Entity, MetricDefinition

    metric_ids = list(MetricDefinition.objects.values_list("id", flat=True)[:22])
    entity_ids = list(
        Entity.objects.filter(cluster__name="bench", kind="accelerator").values_list(
            "id", flat=True
        )
    )
    base = time.time() - 30 * 86400  # far from the live points: no conflicts
    pairs = [(m, e) for e in entity_ids for m in metric_ids]
    elapsed = 0.0
    done = 0
    with psycopg.connect(url) as conn:
        step = 0
        while done < rows_total:
            ts = datetime.fromtimestamp(base + step * SCRAPE_INTERVAL, tz=UTC)
            for start in range(0, len(pairs), batch):
                chunk = pairs[start : start + batch]
                started = time.perf_counter()
                with (
                    conn.cursor() as cur,
                    cur.copy(
                        "COPY monitoring_sample (metric_id, entity_id, ts, value) FROM STDIN"
                    ) as copy,
                ):
                    for m, e in chunk:
                        copy.write_row((m, e, ts, 0.5))
                conn.commit()
                elapsed += time.perf_counter() - started
                done += len(chunk)
                if done >= rows_total:
                    break
            step += 1
    return done / elapsed


def _exit_on_sigterm(*_: object) -> None:
    raise SystemExit(143)  # so ``finally`` stops Prometheus and gunicorn


def main() -> None:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="measured window")
    parser.add_argument("--warmup", type=float, default=90.0, help="seconds before measuring")
    parser.add_argument("--hosts", type=int, default=1280, help="8 cards each")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=2, help="gunicorn threads per worker")
    parser.add_argument("--name", default="remote_write", help="results file name")
    parser.add_argument(
        "--max-samples-per-send", type=int, default=None, help="queue_config (default: 500)"
    )
    args = parser.parse_args()

    with fresh_postgres("remote_write", keep=True) as db_url:
        django_setup(db_url)
        from django.db import connection

        from accounts.services.tokens import token_create
        from inventory.models import Cluster
        from telemetry.receivers.twin import catalogue_sync

        with connection.cursor() as cursor:  # start empty (the database is reused)
            cursor.execute(
                "TRUNCATE monitoring_sample, monitoring_rollup, monitoring_remotewritestatus"
            )
        catalogue_sync()
        Cluster.objects.get_or_create(name="bench", defaults={"kind": Cluster.Kind.UNIFIED})
        token = token_create(name=f"prometheus-{time.time():.0f}", scopes=["ingest"]).plaintext

        pages = {f"/metrics/{fleet.hostname(h)}": fleet.exposition(h) for h in range(args.hosts)}
        exporters = ExporterFixture(
            {path: (lambda text=text: text) for path, text in pages.items()}
        )
        work = Path(tempfile.mkdtemp(prefix="bench_rw_"))
        access_log = work / "access.log"
        port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": db_url,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
            "LOG_LEVEL": "WARNING",
            "PORTAL_VAR_DIR": str(work),
        }
        web = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "cluster_portal.wsgi",
                "--workers",
                str(args.workers),
                "--threads",
                str(args.threads),
                "--worker-class",  # gthread that knows each request's queueing time
                "cluster_portal.web.queue_time.QueueTimedWorker",
                "--bind",
                f"127.0.0.1:{port}",
                "--log-level",
                "warning",
                "--access-logfile",
                str(access_log),
                "--access-logformat",
                "%(L)s %(s)s",
            ],
            cwd=ROOT,
            env=env,
        )
        receiver = f"http://127.0.0.1:{port}/api/v1/telemetry/remote-write/?cluster=bench"
        prometheus = PrometheusServer(
            work / "prometheus",
            _scrape_config(exporters.port, args.hosts, receiver, token, args.max_samples_per_send),
        )
        try:
            time.sleep(3)
            prometheus.start()
            print(f"warm-up {args.warmup:.0f}s (cards register) …", flush=True)
            time.sleep(args.warmup)
            gunicorn_pids = _children(web.pid)
            cpu_pids = {
                "gunicorn": gunicorn_pids,
                "prometheus": [prometheus.process.pid],
                "postgres_all_backends": _postgres_pids(),  # shared server: others' too
            }
            cpu0 = {k: _cpu_seconds(v) for k, v in cpu_pids.items()}
            log0 = _log_lines(access_log)
            p0, s0, t0 = _prom_metrics(prometheus.url), _status("bench"), time.time()
            loads, max_shards, lags, ups = [], 0.0, [], []
            end = t0 + args.minutes * 60
            while time.time() < end:
                time.sleep(min(15, max(end - time.time(), 0.1)))
                m = _prom_metrics(prometheus.url)
                loads.append(os.getloadavg()[0])
                ups.append(_targets_up(prometheus.url))
                max_shards = max(max_shards, m.get(f"{PROM}shards", 0))
                lag = m.get(f"{PROM}highest_timestamp_in_seconds", 0) - m.get(
                    f"{PROM}queue_highest_sent_timestamp_seconds", 0
                )
                lags.append(lag)
                elapsed = time.time() - t0
                stored = (_status("bench")["inserted"] - s0["inserted"]) / elapsed
                shards = m.get(f"{PROM}shards", 0)
                print(
                    f"{elapsed:5.0f}s stored {stored:8,.0f}/s  shards {shards:.0f}"
                    f"  pending {m.get(f'{PROM}samples_pending', 0):,.0f}  lag {lag:.0f}s"
                    f"  failed {m.get(f'{PROM}samples_failed_total', 0):.0f}"
                    f"  up {ups[-1]}  load {loads[-1]:.2f}",
                    flush=True,
                )
            p1, s1, t1 = _prom_metrics(prometheus.url), _status("bench"), time.time()
            cpu1 = {k: _cpu_seconds(v) for k, v in cpu_pids.items()}
        finally:
            prometheus.stop()
            web.terminate()
            web.wait(timeout=30)
            exporters.stop()
        seconds = t1 - t0
        p95_portal, requests, statuses = _p95_request_seconds(access_log, log0)
        stored = s1["inserted"] - s0["inserted"]
        copy_rate = _copy_rate(db_url, rows_total=max(stored // 4, 100_000), batch=500)

    def delta(name: str) -> float:
        return p1.get(f"{PROM}{name}", 0.0) - p0.get(f"{PROM}{name}", 0.0)

    rate = stored / seconds
    appended = (
        p1.get("prometheus_tsdb_head_samples_appended_total", 0.0)
        - p0.get("prometheus_tsdb_head_samples_appended_total", 0.0)
    ) / seconds
    cores = {k: (cpu1[k] - cpu0[k]) / seconds for k in cpu0}
    # CPU per stored sample, from the processes' own counters: what the receiver costs
    # whatever else the shared machine runs, and what two idle cores would then sustain.
    us_per_sample = {k: round(v / rate * 1e6, 1) for k, v in cores.items()} if rate else {}
    own = cores["gunicorn"] + cores["prometheus"]
    result = {
        "minutes": round(seconds / 60, 2),
        "fleet": {
            "hosts": args.hosts,
            "cards": args.hosts * fleet.CARDS_PER_HOST,
            "fields": len(fleet.FIELDS),
            "scrape_interval_s": SCRAPE_INTERVAL,
            "offered_samples_per_s": args.hosts
            * fleet.CARDS_PER_HOST
            * len(fleet.FIELDS)
            / SCRAPE_INTERVAL,
        },
        "server": f"gunicorn, {args.workers} workers x {args.threads} threads",
        "prometheus": "Debian prometheus 2.42, queue_config "
        + (
            f"max_samples_per_send {args.max_samples_per_send}"
            if args.max_samples_per_send
            else "default"
        ),
        "stored_samples_per_s": round(rate),
        "stored_samples": stored,
        "duplicates_skipped": s1["duplicates"] - s0["duplicates"],
        "received_samples": s1["samples"] - s0["samples"],
        "dropped_by_receiver": s1["dropped"] - s0["dropped"],
        "requests": s1["requests"] - s0["requests"],
        "request_statuses": statuses,
        "prometheus_counters": {
            "samples_sent": delta("samples_total"),
            "samples_failed": delta("samples_failed_total"),
            "samples_retried": delta("samples_retried_total"),
            "samples_dropped": delta("samples_dropped_total"),
            "samples_pending_end": p1.get(f"{PROM}samples_pending", 0.0),
            "shards_end": p1.get(f"{PROM}shards", 0.0),
            "shards_desired_end": p1.get(f"{PROM}shards_desired", 0.0),
            "shards_max_seen": max_shards,
            "send_lag_s_max": max(lags) if lags else None,
            "send_lag_s_end": lags[-1] if lags else None,
            "sent_batch_p95_s": _hist_p95(p0, p1, f"{PROM}sent_batch_duration_seconds"),
            "max_samples_per_send": p1.get(f"{PROM}max_samples_per_send"),
        },
        "portal_request_p95_s": p95_portal,
        "portal_requests_logged": requests,
        "prometheus_appended_samples_per_s": round(appended),
        "targets_up_min": min(ups) if ups else None,
        "cpu_us_per_stored_sample": us_per_sample,
        "projected_samples_per_s_on_2_idle_cores_without_postgres": (
            round(2 / own * rate) if own else None
        ),
        "raw_copy_samples_per_s": round(copy_rate),
        "ratio_receiver_to_copy": round(rate / copy_rate, 3),
        "load": {
            "loadavg_mean": round(sum(loads) / len(loads), 2) if loads else None,
            "loadavg_max": max(loads) if loads else None,
            "cpu_cores_used": {k: round(v, 2) for k, v in cores.items()},
        },
    }
    for key, value in result.items():
        print(f"{key}: {value}")
    print(f"wrote {write_result(args.name, result)}")


if __name__ == "__main__":
    main()
