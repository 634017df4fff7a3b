"""Benchmark: a cluster read through a real VictoriaMetrics at 10,240 and 102,400 cards.

Debian's ``victoria-metrics`` on a free port (its own data directory, stopped by PID) holds
two synthetic fleets side by side — 10,240 and 102,400 dcgm-exporter cards (8 per node) × 6
fields, a scrape every 30 s over the last ``--scrapes`` × 30 s — imported through its own
Prometheus import API. Each fleet is one portal cluster whose PromQL source selects it by a
``fleet`` label. Measured in one run, both sizes side by side (server time in this process
through Django's test client, medians of ``--repeat``):

* the PromQL inventory sync, twice: the first registers every card, the second finds them
  known (pages past ``PROMQL_MAX_RESPONSE_BYTES``),
* the overview and hardware and memory API payloads and the accelerator list (page of 1,000),
* one gate-style window aggregate of one card,
* and this process's peak RSS.

An endpoint that answers 503 (a figure the server cannot give within the answer cap) is
printed as such with its reason: that is a finding, not a crash.

With ``--rules`` (one size): the fleet alone in the server, the shipped recording rules
(``deploy/prometheus/cluster-portal-rules.yml``) evaluated over the imported window by Debian's
``vmalert`` in replay mode (``-replay.timeFrom/-replay.timeTo``, written back into the same
VictoriaMetrics), the synced nodes placed in racks of 32 (as an inventory import would) with
the portal's placement (``/metrics/topology``) imported as a scrape would store it, and the
pages measured on the same cards in one run: read from the recorded series (source without a
selector: the hardware page from the per-rack records), the hardware page again with the
per-rack records ignored (the per-host records, placed by the portal), then aggregated at
query time (the same source with a no-op selector ``fleet=~".+"``, which the rules cannot
serve).

Run: ``python bench/bench_victoriametrics.py [--scrapes 6] [--repeat 3] [--sizes N --rules]``
(PostgreSQL).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, django_setup, fresh_postgres, median, write_result  # noqa: E402

FIELDS = ("GPU_UTIL", "FB_USED", "FB_FREE", "GPU_TEMP", "POWER_USAGE", "XID_ERRORS")
SIZES = (10_240, 102_400)  # --sizes overrides (a quick trial)
BREAKER_SECONDS = 16  # the PromQL guard's back-off after a failure (15 s), and a second


def _value(field: str, node: int, gpu: int, i: int) -> str:
    if field == "GPU_UTIL":
        return str((node * 7 + gpu * 13 + i) % 101)
    if field == "FB_USED":
        return str(1000 + (node + gpu + i) % 70000)
    if field == "FB_FREE":
        return "10000"
    if field == "GPU_TEMP":
        return str(40 + (node + gpu) % 40)
    if field == "POWER_USAGE":
        return str(200 + (node * 3 + gpu + i) % 500)
    return "79" if (node + gpu) % 997 == 0 else "0"


#: Nodes per import request: the bench process's own memory stays small (a whole scrape of
#: 102,400 cards as one body took ~300 MB, which the peak RSS then reported as the portal's).
IMPORT_NODES = 1000


def import_fleets(server, *, sizes: tuple[int, ...], scrapes: int, now: float) -> float:
    """Import both fleets, one scrape at a time; returns the seconds it took."""
    started = time.perf_counter()
    for i in range(scrapes):
        at_ms = int((now - (scrapes - 1 - i) * 30) * 1000)
        for cards in sizes:
            fleet = f"f{cards}"
            for first in range(0, cards // 8, IMPORT_NODES):
                lines = []
                for node in range(first, min(first + IMPORT_NODES, cards // 8)):
                    host = f"{fleet}-n{node:05d}"
                    for gpu in range(8):
                        labels = (
                            f'fleet="{fleet}",gpu="{gpu}",UUID="GPU-{fleet}-{node:05d}-{gpu}",'
                            f'Hostname="{host}",modelName="NVIDIA H100 80GB HBM3"'
                        )
                        for field in FIELDS:
                            value = _value(field, node, gpu, i)
                            lines.append(f"DCGM_FI_DEV_{field}{{{labels}}} {value} {at_ms}")
                body = ("\n".join(lines) + "\n").encode()
                request = urllib.request.Request(
                    f"{server.url}/api/v1/import/prometheus", data=body, method="POST"
                )
                with urllib.request.urlopen(request, timeout=600):
                    pass
    with urllib.request.urlopen(f"{server.url}/internal/force_flush", timeout=120):
        pass
    return time.perf_counter() - started


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _timed(call, repeat: int) -> tuple[float | None, str]:
    times, note = [], "ok"
    for _ in range(repeat):
        started = time.perf_counter()
        outcome = call()
        times.append(time.perf_counter() - started)
        if outcome is not None:
            note = outcome
    return median(times), note


def replay_rules(server, *, start: float, end: float) -> float:
    """The shipped recording rules evaluated over ``[start, end]`` by vmalert's replay mode,
    written into ``server``; returns the seconds it took."""
    from telemetry.read.promql.rules import INTERVAL, RULES_FILE

    started = time.perf_counter()
    server.replay_rules(RULES_FILE, start=start, end=end, step=INTERVAL)
    return time.perf_counter() - started


NODES_PER_RACK = 32  # 256 cards a rack: 400 racks at 102,400 cards


def place_in_racks(cluster) -> int:
    """Place the synced nodes in racks of :data:`NODES_PER_RACK` (as an inventory import
    would), 10 racks a supernode; returns how many racks."""
    from inventory.models import Node, Rack, Supernode
    from telemetry.catalogue.entities import entities_path_sync

    nodes = list(
        Node.objects.filter(cluster=cluster).order_by("hostname").values_list("pk", flat=True)
    )
    racks = 0
    for first in range(0, len(nodes), NODES_PER_RACK):
        if racks % 10 == 0:
            supernode = Supernode.objects.create(cluster=cluster, name=f"sn{racks // 10:03d}")
        rack = Rack.objects.create(supernode=supernode, name=f"r{racks % 10}")
        Node.objects.filter(pk__in=nodes[first : first + NODES_PER_RACK]).update(rack=rack)
        racks += 1
    entities_path_sync(cluster=cluster, node_ids=nodes)
    return racks


def import_topology(server, *, at_times: list[float]) -> int:
    """``/metrics/topology`` as a Prometheus scraping it at ``at_times`` would have stored it;
    returns how many series."""
    from django.test import Client

    from accounts.services.tokens import token_create

    token = token_create(name="bench-topology", scopes=["read"]).plaintext
    answer = Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/metrics/topology")
    series = [line for line in answer.content.decode().splitlines() if line[:1] != "#"]
    body = "".join(f"{line} {int(at * 1000)}\n" for at in at_times for line in series).encode()
    request = urllib.request.Request(
        f"{server.url}/api/v1/import/prometheus", data=body, method="POST"
    )
    with urllib.request.urlopen(request, timeout=600):
        pass
    return len(series)


def sync_twice(source) -> dict:
    """The first sync registers every card; the next (beat's steady work) finds them known."""
    from telemetry.receivers.promql_sync import promql_source_sync

    out: dict = {}
    for name in ("sync", "sync_again"):
        started = time.perf_counter()
        try:
            result = promql_source_sync(source=source)
            out[name] = {"seconds": time.perf_counter() - started, "cards": result.cards}
        except Exception as exc:  # a finding to print, not a crash
            out[name] = {"seconds": time.perf_counter() - started, "error": str(exc)[:200]}
    return out


def measure(
    cluster, source, *, repeat: int, sync: bool = True, pages: tuple[str, ...] | None = None
) -> dict:
    from django.test import Client

    from accounts.services.tokens import token_create
    from telemetry import read
    from telemetry.models import Entity

    out: dict = sync_twice(source) if sync else {}
    token = token_create(name=f"bench-{cluster.name}", scopes=["read"]).plaintext
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def api(path: str, **params):
        def call():
            answer = client.get(path, {"cluster": cluster.name, **params})
            if answer.status_code != 200:
                detail = answer.json().get("detail", "") if answer.content else ""
                return f"HTTP {answer.status_code}: {detail[:300]}"
            rows = answer.json().get("results") if path.endswith("/accelerators/") else None
            missing = [r for r in rows or () if r.get("latest_status") != "ok" or not r["latest"]]
            if missing:  # a 200 whose cards carry no values is not a measured list
                return f"{len(missing)} of {len(rows)} cards without latest values"
            return None

        return call

    for name, path, params in (
        ("hardware", "/api/v1/dashboards/hardware/", {}),
        ("overview", "/api/v1/dashboards/overview/", {}),
        ("memory", "/api/v1/dashboards/memory/", {}),
        ("accelerators_1000", "/api/v1/accelerators/", {"page_size": 1000}),
    ):
        if pages is not None and name not in pages:
            continue
        seconds, note = _timed(api(path, **params), repeat)
        out[name] = {"seconds": seconds, "note": note}
        if note != "ok":
            # A failed answer opens the source's circuit for a few seconds: let it close, so
            # the next page is measured rather than refused at once.
            time.sleep(BREAKER_SECONDS)
    card = Entity.objects.filter(cluster=cluster, kind="accelerator").order_by("pk").first()
    if card is not None and pages is None:
        now = datetime.now(tz=UTC)

        def gate():
            read.window_aggregate(
                metric="accelerator_utilization_ratio",
                cluster_id=cluster.pk,
                entity_kind="accelerator",
                entity_key=card.key,
                aggregation="p95",
                start=now - timedelta(minutes=2),
                end=now,
            )

        seconds, note = _timed(gate, repeat)
        out["gate_measurement"] = {"seconds": seconds, "note": note}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scrapes", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--rules", action="store_true", help="one size: recorded vs live")
    args = parser.parse_args()
    sizes = tuple(args.sizes)
    if args.rules and len(sizes) != 1:
        sys.exit("--rules measures one fleet alone in the server: give one --sizes")
    sys.path.insert(0, str(ROOT))
    from tests.servers import VictoriaMetricsServer, victoria_metrics_binary

    if victoria_metrics_binary() is None:
        sys.exit("victoria-metrics is not installed (apt-get install victoria-metrics)")
    with fresh_postgres("victoriametrics") as url, tempfile.TemporaryDirectory() as tmp:
        django_setup(url)
        from django.conf import settings

        from inventory.models import Cluster
        from telemetry.models import PromQLDataSource
        from telemetry.receivers.twin import catalogue_sync

        settings.OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
        settings.DASHBOARD_CACHE_SECONDS = 0
        server = VictoriaMetricsServer(Path(tmp) / "vm").start()
        try:
            now = time.time()
            loaded = import_fleets(server, sizes=sizes, scrapes=args.scrapes, now=now)
            peaks = {"import": _peak_rss_mb()}  # ru_maxrss: the peak so far, by phase
            samples = sum(sizes) * len(FIELDS) * args.scrapes
            print(f"imported {samples:,} samples in {loaded:.1f} s ({samples / loaded:,.0f}/s)")
            biggest = max(sizes)
            server.wait_for_series(f'DCGM_FI_DEV_GPU_UTIL{{fleet="f{biggest}"}}', biggest, 120)
            catalogue_sync()
            results = {}
            if args.rules:
                cards = sizes[0]
                cluster = Cluster.objects.create(name=f"vm-{cards}", kind=Cluster.Kind.UNIFIED)
                source = PromQLDataSource.objects.create(
                    cluster=cluster, url=server.url, timeout_seconds=60
                )
                synced = sync_twice(source)
                peaks["syncs"] = _peak_rss_mb()
                racks = place_in_racks(cluster)
                # The syncs took minutes: fresh scrapes and the rules over them, so the
                # readings below fall inside the lookback of fresh data; the placement as
                # scraped at the same times. VictoriaMetrics aligns a range query's points
                # (vmalert's replay) to its step, and a point sees the samples of its own
                # step only: the scrapes are put on those points (one scrape after them, as
                # the previous run here did, recorded nothing at all).
                step = 30
                fresh = time.time() // step * step
                times = [fresh - 2 * step, fresh - step, fresh]
                for at in times:
                    import_fleets(server, sizes=sizes, scrapes=1, now=at)
                placed = import_topology(server, at_times=times)
                print(f"{racks} racks; {placed:,} placement series imported")
                # A new series is searchable a moment after its import: before the replay.
                server.wait_for_series("cluster_portal_node_rack", placed, 120)
                replayed = replay_rules(server, start=times[0], end=fresh)
                print(f"recording rules replayed over the fresh scrapes in {replayed:.1f} s")
                from telemetry import read
                from telemetry.read.fleet import CARD_METRICS

                how = read.rack_card_figures(cluster.pk, list(CARD_METRICS), hot_n=20).source
                print(f"the hardware page reads: {how}")
                results["rack_figures_source"] = how
                results["recorded"] = synced | measure(
                    cluster, source, repeat=args.repeat, sync=False
                )
                # The same pages with the per-rack records ignored: the per-host records,
                # placed by the portal (the path before the rack rules), in the same run.
                from telemetry.read.promql import hosts

                by_rack, hosts.recorded_rack_figures = (
                    hosts.recorded_rack_figures,
                    (lambda *_a, **_k: {}),
                )
                try:
                    results["recorded_per_host"] = measure(
                        cluster, source, repeat=args.repeat, sync=False, pages=("hardware",)
                    )
                finally:
                    hosts.recorded_rack_figures = by_rack
                source.selector = 'fleet=~".+"'  # the rules cannot serve it: live aggregation
                source.save(update_fields=["selector"])
                time.sleep(BREAKER_SECONDS)
                peaks["recorded pages"] = _peak_rss_mb()
                results["live"] = measure(cluster, source, repeat=args.repeat, sync=False)
                peaks["live pages"] = _peak_rss_mb()
                results["rules_replay_seconds"] = replayed
                for how in ("recorded", "recorded_per_host", "live"):
                    print(f"== {cards:,} cards, {how}")
                    for name, figure in results[how].items():
                        print(f"  {name:20} {figure}")
            for cards in () if args.rules else sizes:
                cluster = Cluster.objects.create(name=f"vm-{cards}", kind=Cluster.Kind.UNIFIED)
                source = PromQLDataSource.objects.create(
                    cluster=cluster,
                    url=server.url,
                    selector=f'fleet="f{cards}"',
                    timeout_seconds=60,
                )
                results[cards] = measure(cluster, source, repeat=args.repeat)
                print(f"== {cards:,} cards")
                for name, figure in results[cards].items():
                    print(f"  {name:20} {figure}")
            rss_mb = _peak_rss_mb()
            print(f"peak RSS of this process {rss_mb:.0f} MB")
            results["peak_rss_mb_by_phase"] = peaks
        finally:
            server.stop()
    write_result(
        f"victoriametrics_rules_{sizes[0]}" if args.rules else "victoriametrics",
        {"scrapes": args.scrapes, "import_seconds": loaded, "results": results, "rss_mb": rss_mb},
    )


if __name__ == "__main__":
    main()
