"""Benchmark: a scheduler sync of 10,240 cards and 20,000 jobs, then the idle list and a card's
swimlane at that size (issue 32, "Speed": sync ≤ 5 s writing only what changed; swimlane and
idle list ≤ 1 s).

The slurmrestd v0.0.38 answers are the recorded shapes the tests use (``tests/scheduling``:
``gres_detail`` like ``gpu:h100:4(IDX:0-3)``, ``tres_per_node``, epoch times) scaled up: 1,280
nodes × 8 ``gpu:h100`` cards; of 20,000 jobs 2,240 run (a quarter of the nodes one 8-card job,
a quarter two 4-card jobs, a quarter four 2-card jobs, a quarter idle: 7,680 cards held), 2,000
wait, the rest ended. The inventory is registered the way ingestion does
(``devices_register``), and ``--hours`` of ``accelerator_utilization_ratio`` per card at
``--every`` seconds are COPYed through the store's writer path (as ``bench_accelerator_list``
does); a third of the held cards idle (under the threshold), the rest busy.

The answers are encoded to JSON once; the timed "portal time" is what a sync does after the
bytes arrive: ``json.loads`` + the normaliser + ``_store`` (the write transaction and the
attribution), not the network. Timed cases, median of ``--repeats`` runs, each from the same
state (first sync and 1 % changed run in a transaction that is rolled back):

- first sync: everything new;
- unchanged (full answer): the same answers again;
- unchanged (304): slurmrestd answers 304 for jobs (nodes and partitions are still read);
- 1 % changed: 100 running jobs complete and 100 waiting ones start on their cards.

Each case counts statements and rows written (INSERT/UPDATE/DELETE), split into the
scheduler's own tables and the attribution intervals (which a sync extends on purpose: the
open intervals' ``last_seen_at`` is the proof a job still holds its card).

The samples are compacted as a running portal's minute task leaves them (minute and
15-minute rollups up to 90 s ago). The idle list is timed with its 15-minute fast path and
without it (every held card's minutes folded), interleaved, and the two lists are checked
equal field for field.

Run: ``python bench/bench_scheduler_sync.py [--repeats 3] [--hours 3] [--keep]
[--reads-after-build]``.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import django_setup, fresh_postgres, median, reused, write_result  # noqa: E402

NODES, CARDS = 1280, 8
JOBS, PENDING = 20000, 2000
ACCOUNTS = ("tenant-a", "tenant-b", "tenant-c", "tenant-d", "tenant-e")
CHANGED = 100  # × 2: running jobs that end, waiting jobs that start (1 % of 20,000)


def host(n: int) -> str:
    return f"gpu-{n:05d}"


def _range(indices: list[int]) -> str:
    return f"{indices[0]}-{indices[-1]}" if len(indices) > 1 else str(indices[0])


def answers(now: int) -> dict[str, dict]:
    """The recorded v0.0.38 answers, scaled up."""
    jobs, job_id = [], 1000
    for node in range(NODES):
        width = (8, 4, 2, 0)[node % 4]
        for first in range(0, CARDS, width) if width else ():
            indices = list(range(first, first + width))
            jobs.append({
                "job_id": job_id, "job_state": "RUNNING", "name": f"train-{job_id}",
                "account": ACCOUNTS[job_id % len(ACCOUNTS)], "user_name": "alice",
                "partition": "train", "state_reason": "None", "nodes": host(node),
                "gres_detail": [f"gpu:h100:{width}(IDX:{_range(indices)})"],
                "tres_per_node": f"gres:gpu:{width}", "node_count": 1, "tasks": 1,
                "submit_time": now - 4 * 3600 - 600, "start_time": now - 4 * 3600 + job_id % 600,
                "end_time": now + 20 * 3600,
            })  # fmt: skip
            job_id += 1
    running = len(jobs)
    for n in range(PENDING):
        jobs.append({
            "job_id": job_id, "job_state": "PENDING", "name": f"wait-{job_id}",
            "account": ACCOUNTS[job_id % len(ACCOUNTS)], "user_name": "bob", "partition": "train",
            "state_reason": ("Resources", "Priority")[n % 2], "nodes": "", "gres_detail": [],
            "tres_per_node": f"gres:gpu:{(1, 2, 4, 8)[n % 4]}", "node_count": 1, "tasks": 1,
            "submit_time": now - 600 - n, "start_time": 0, "end_time": 0,
        })  # fmt: skip
        job_id += 1
    while len(jobs) < JOBS:
        n = len(jobs)
        jobs.append({
            "job_id": job_id, "job_state": ("COMPLETED", "FAILED", "CANCELLED")[n % 3],
            "name": f"done-{job_id}", "account": ACCOUNTS[job_id % len(ACCOUNTS)],
            "user_name": "carol", "partition": "train", "state_reason": "None",
            "nodes": host(n % NODES), "gres_detail": [], "tres_per_node": "gres:gpu:1",
            "node_count": 1, "tasks": 1, "submit_time": now - 86400 + n,
            "start_time": now - 86000 + n, "end_time": now - 80000 + n,
        })  # fmt: skip
        job_id += 1
    nodes = [
        {"name": host(n), "state": ("allocated", "mixed", "mixed", "idle")[n % 4],
         "gres": "gpu:h100:8", "gres_used": f"gpu:h100:{(8, 8, 8, 0)[n % 4]}(IDX:0-7)"
         if n % 4 != 3 else "gpu:h100:0(IDX:N/A)", "partitions": ["train"], "reason": ""}
        for n in range(NODES)
    ]  # fmt: skip
    partitions = [{"name": "train", "state": "UP", "nodes": f"gpu-[00000-{NODES - 1:05d}]"}]
    print(f"{running:,} running jobs, {PENDING:,} waiting, {JOBS - running - PENDING:,} ended")
    return {"jobs": {"jobs": jobs, "errors": []}, "nodes": {"nodes": nodes, "errors": []},
            "partitions": {"partitions": partitions, "errors": []}}  # fmt: skip


def changed(base: dict, now: int, run: int) -> dict:
    """1 % of the jobs changed: ``CHANGED`` running jobs end, as many waiting ones start on
    their cards (a different set each run)."""
    jobs = [dict(j) for j in base["jobs"]["jobs"]]
    running = [j for j in jobs if j["job_state"] == "RUNNING"]
    waiting = [j for j in jobs if j["job_state"] == "PENDING"]
    for ended, started in zip(
        running[run * CHANGED : (run + 1) * CHANGED],
        waiting[run * CHANGED : (run + 1) * CHANGED],
        strict=True,
    ):
        started.update(job_state="RUNNING", nodes=ended["nodes"], state_reason="None",
                       gres_detail=list(ended["gres_detail"]), start_time=now - 30,
                       tres_per_node=ended["tres_per_node"], end_time=now + 3600)  # fmt: skip
        ended.update(job_state="COMPLETED", end_time=now - 30)
    return {**base, "jobs": {"jobs": jobs, "errors": []}}


def build(hours: float, every: int, now: float) -> None:
    from django.db import connection, transaction

    from accounts.models import Tenant
    from inventory.models import Cluster
    from scheduling.services.sources import (
        scheduler_account_mapping_create,
        scheduler_source_create,
    )
    from telemetry.catalogue.registry import DeviceRef, devices_register
    from telemetry.models import MetricDefinition

    started = time.perf_counter()
    cluster = Cluster.objects.create(name="slurm-big")
    for account in ACCOUNTS:
        tenant = Tenant.objects.create(slug=account, name=account)
        scheduler_account_mapping_create(cluster=cluster, account=account, tenant=tenant)
    scheduler_source_create(
        cluster=cluster, base_url="http://slurm-head.example.com:6820", user_name="slurmrest",
        token_env="SLURM_JWT_BENCH", enabled=False,
    )  # fmt: skip
    devices = [
        DeviceRef(
            host=host(n // CARDS),
            index=n % CARDS,
            vendor_id=f"GPU-{n:08x}",
            model_name="NVIDIA H100 80GB HBM3",
        )  # fmt: skip
        for n in range(NODES * CARDS)
    ]
    entity_of = devices_register(cluster, devices)
    metric, _ = MetricDefinition.objects.get_or_create(
        name="accelerator_utilization_ratio", defaults={"entity_kind": "accelerator"}
    )
    print(f"inventory: {len(entity_of):,} cards in {time.perf_counter() - started:.0f} s")
    started = time.perf_counter()
    steps = int(hours * 3600 // every)
    # Card n idles (2 %) when its node runs jobs and n % 3 == 0, else works (40-95 %).
    values = {
        entity_id: (0.02 if n % 3 == 0 else 0.4 + (n % 11) * 0.05)
        for n, entity_id in enumerate(entity_of[d.key] for d in devices)
    }
    with transaction.atomic(), connection.cursor() as cursor:
        for step in range(steps):
            ts = time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(now - every * (steps - step)))
            buffer = io.StringIO()
            for entity_id, value in values.items():
                buffer.write(f"{metric.pk}\t{entity_id}\t{ts}\t{value}\n")
            with cursor.cursor.copy(
                "COPY monitoring_sample (metric_id, entity_id, ts, value) FROM STDIN"
            ) as copy:
                copy.write(buffer.getvalue())
        cursor.execute("ANALYZE monitoring_sample")
    print(f"{steps * len(values):,} samples in {time.perf_counter() - started:.0f} s")
    # Compacted as a running portal's minute task leaves it: minute and 15-minute rollups up
    # to 90 s ago, the newest minutes raw (what the idle list's 15-minute fast path reads).
    from telemetry.store.compaction import rollups_compact

    started = time.perf_counter()
    rollups_compact(now=now)
    with connection.cursor() as cursor:
        # Autovacuum's insert trigger would have visited these tables by now: the idle
        # cards' buckets are then read from the index alone.
        cursor.execute("VACUUM ANALYZE monitoring_rollup")
        cursor.execute("VACUUM ANALYZE monitoring_sample")
    print(f"compacted in {time.perf_counter() - started:.0f} s")


class Writes:
    """Counts statements and rows written, by table family, through Django's execute hook."""

    def __init__(self) -> None:
        self.statements = 0
        self.queries = 0
        self.rows = {"scheduling": 0, "attribution": 0, "other": 0}

    def __call__(self, execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        self.queries += 1
        verb = sql.lstrip()[:6].upper()
        if verb in ("INSERT", "UPDATE", "DELETE"):
            self.statements += 1
            family = (
                "scheduling" if '"scheduling_' in sql[:80]
                else "attribution" if "attributioninterval" in sql[:80] else "other"
            )  # fmt: skip
            self.rows[family] += max(context["cursor"].rowcount, 0)
        return result


def one_sync(source, encoded: dict[str, bytes], now, *, not_modified: bool = False):
    """What a sync does once the bytes are in: decode, normalise, store."""
    from django.db import connection

    from scheduling.services.sync import _store
    from scheduling.slurm import v0_0_38

    writes = Writes()
    started = time.perf_counter()
    with connection.execute_wrapper(writes):
        jobs_answer = None if not_modified else json.loads(encoded["jobs"])
        jobs, refused = v0_0_38.jobs(jobs_answer) if jobs_answer is not None else (None, [])
        nodes = v0_0_38.nodes(json.loads(encoded["nodes"]))
        partitions = v0_0_38.partitions(json.loads(encoded["partitions"]))
        result = _store(source, "v0.0.38", int(now.timestamp()), jobs, refused, nodes,
                        partitions, [], now)  # fmt: skip
    elapsed = time.perf_counter() - started
    return elapsed, writes, result


def timed_case(name, runs: list[tuple[float, Writes, object]]) -> dict:
    seconds = [r[0] for r in runs]
    writes, result = runs[-1][1], runs[-1][2]
    row = {
        "case": name,
        "median_s": round(median(seconds), 3),
        "runs_s": [round(s, 3) for s in seconds],
        "queries": writes.queries,
        "write_statements": writes.statements,
        "rows_written": writes.rows,
        "intervals_started": result.intervals_started,
        "intervals_ended": result.intervals_ended,
    }
    print(row)
    return row


def rolled_back(fn):
    from django.db import transaction

    with transaction.atomic():
        out = fn()
        transaction.set_rollback(True)
    return out


def measure_reads(repeats: int, now) -> list[dict]:
    from django.db import connection
    from django.test import Client

    from accounts.models import User
    from accounts.services.roles import ROLE_OPERATOR, roles_ensure
    from dashboards.selectors.card_holders import card_holders
    from inventory.models import Accelerator
    from scheduling.models import SchedulerJob
    from scheduling.selectors.idle import idle_allocations

    operator, _ = User.objects.get_or_create(username="bench-operator", defaults={"is_staff": True})
    operator.groups.add(roles_ensure()[ROLE_OPERATOR])
    client = Client()
    client.force_login(operator)
    card = Accelerator.objects.get(node__hostname=host(0), index=0)
    from datetime import timedelta

    from cost.idle_split import idle_held_seconds
    from inventory.models import Cluster
    from telemetry.read.local import runs

    cluster = Cluster.objects.get(name="slurm-big")
    hour = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)

    def fold_only(read):
        """``read`` without the 15-minute fast paths (every card's readings folded)."""

        def call():
            fast, runs.span_classes = runs.span_classes, lambda **_kw: (set(), set())
            try:
                return read()
            finally:
                runs.span_classes = fast

        return call

    def idle_list():
        return idle_allocations(SchedulerJob.objects.all(), now=now)

    def ledger_hour():
        return idle_held_seconds(cluster, hour, hour + timedelta(hours=1))

    cases = {
        "idle list (selector)": idle_list,
        "idle list (selector, minute fold only)": fold_only(idle_list),
        # The ledger's close of one hour reads the scheduler intervals' idle card-seconds.
        "ledger hour: allocated idle": ledger_hour,
        "ledger hour: allocated idle (minute fold only)": fold_only(ledger_hour),
        "idle list (API)": lambda: client.get("/api/v1/scheduler-idle/"),
        "card swimlane (selector)": lambda: card_holders(card, operator, now=now),
        "card page (with swimlane)": lambda: client.get(
            f"/dashboards/hardware/accelerators/{card.pk}/"
        ),
    }
    out = []
    timed: dict[str, list] = {name: [[], 0, None] for name in cases}
    for _ in range(repeats):  # interleaved, so load changes hit every case alike
        for name, fn in cases.items():
            counted = Writes()
            with connection.execute_wrapper(counted):
                started = time.perf_counter()
                answer = fn()
                timed[name][0].append(time.perf_counter() - started)
            timed[name][1:] = [counted.queries, answer]

    def rows_of(report):
        return [
            (r.job.job_id, r.cards_held, r.cards_idle, r.cards_unmeasured, r.longest_idle,
             r.idle_since, round(r.idle_card_hours, 9), r.cards)
            for r in report.jobs
        ]  # fmt: skip

    same = rows_of(timed["idle list (selector)"][2]) == rows_of(
        timed["idle list (selector, minute fold only)"][2]
    )
    print(f"fast path and minute fold list the same jobs, field for field: {same}")
    assert same
    ledger = timed["ledger hour: allocated idle"][2]
    assert ledger == timed["ledger hour: allocated idle (minute fold only)"][2], "ledger differs"
    for name in cases:
        times, queries, answer = timed[name]
        detail = ""
        if hasattr(answer, "status_code"):
            assert answer.status_code == 200, (name, answer.status_code, answer.content[:300])
        elif isinstance(answer, dict):
            detail = f"{sum(answer.values()) / 3600:,.1f} idle card-hours, {len(answer)} tenants"
        elif hasattr(answer, "jobs_checked"):
            detail = f"{len(answer.jobs)} idle jobs of {answer.jobs_checked} running"
        else:
            detail = f"{len(answer.holdings)} holdings"
        row = {
            "case": name,
            "median_s": round(median(times), 3),
            "runs_s": [round(t, 3) for t in times],
            "queries": queries,
            "detail": detail,
        }
        print(row)
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hours", type=float, default=3.0)
    parser.add_argument("--every", type=int, default=60, help="seconds between samples")
    parser.add_argument("--keep", action="store_true", help="keep and reuse the database")
    parser.add_argument("--label", default="", help="suffix of the results file (before/after)")
    parser.add_argument(
        "--reads-after-build",
        action="store_true",
        help="skip the sync cases: one sync, then time the reads",
    )
    parser.add_argument(
        "--reads-only",
        action="store_true",
        help="with --keep: time the reads only, on the jobs and intervals the last run left",
    )
    args = parser.parse_args()
    with fresh_postgres("schedsync", keep=args.keep) as url:
        django_setup(url)
        from django.utils import timezone

        from scheduling.models import (
            SchedulerJob,
            SchedulerNode,
            SchedulerPartition,
            SchedulerSource,
        )
        from telemetry.models import AttributionInterval

        wall = time.time()
        if not reused(url):
            build(args.hours, args.every, wall)
        source = SchedulerSource.objects.get(cluster__name="slurm-big")
        now = timezone.now()
        base = answers(int(wall))
        encoded = {k: json.dumps(v).encode() for k, v in base.items()}
        print(f"jobs answer: {len(encoded['jobs']) / 2**20:.1f} MiB")
        if args.reads_after_build or args.reads_only and reused(url):
            if not args.reads_only:
                one_sync(source, encoded, now)
            reads = measure_reads(args.repeats, now)
            path = write_result(
                "scheduler_sync_reads" + (f"_{args.label}" if args.label else ""),
                {"cards": NODES * CARDS, "jobs": JOBS, "reads": reads, "hours": args.hours},
            )
            print(f"written {path}")
            return
        # A kept database starts over: no jobs, nodes or scheduler intervals.
        for model in (SchedulerJob, SchedulerNode, SchedulerPartition):
            model.objects.filter(source=source).delete()
        AttributionInterval.objects.filter(cluster_id=source.cluster_id).delete()
        rows = []
        rows.append(timed_case("first sync (all new)", [
            rolled_back(lambda: one_sync(source, encoded, now)) for _ in range(args.repeats)
        ]))  # fmt: skip
        one_sync(source, encoded, now)  # the state the next cases start from
        rows.append(timed_case("unchanged (full answer)", [
            one_sync(source, encoded, now) for _ in range(args.repeats)
        ]))  # fmt: skip
        rows.append(timed_case("unchanged (jobs 304)", [
            one_sync(source, encoded, now, not_modified=True) for _ in range(args.repeats)
        ]))  # fmt: skip
        variants = [
            {**encoded, "jobs": json.dumps(changed(base, int(wall), run)["jobs"]).encode()}
            for run in range(args.repeats)
        ]
        rows.append(timed_case("1 % of jobs changed", [
            rolled_back(lambda v=v: one_sync(source, v, now)) for v in variants
        ]))  # fmt: skip
        reads = measure_reads(args.repeats, now)
        name = "scheduler_sync" + (f"_{args.label}" if args.label else "")
        path = write_result(
            name,
            {
                "cards": NODES * CARDS,
                "jobs": JOBS,
                "sync": rows,
                "reads": reads,
                "hours": args.hours,
                "every": args.every,
            },
        )
        print(f"written {path}")


if __name__ == "__main__":
    main()
