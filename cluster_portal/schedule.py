"""Every periodic task the portal runs, with its cadence and why. Beat reads only this module.

Keep entries explicit: name, task, cadence in seconds and an ``expires`` so a backlog left by
a stopped worker is dropped instead of replayed in a burst when it returns.
"""

from __future__ import annotations

from django.conf import settings

BEAT_SCHEDULE: dict[str, dict] = {
    # Proves a worker is consuming the queue; the status page shows workers whose last
    # heartbeat is older than HEARTBEAT_STALE_AFTER_SECONDS (45 s) as down. 10 s gives three
    # chances before that.
    # One per queue group, so a worker that consumes only ticks and gates (or only outbound
    # work) is seen alive too.
    "worker-heartbeat": {
        "task": "monitoring.heartbeat",
        "schedule": 10.0,
        "options": {"expires": 10.0},
    },
    "worker-heartbeat-ticks": {
        "task": "monitoring.heartbeat",
        "schedule": 10.0,
        "options": {"expires": 10.0, "queue": settings.TICK_QUEUE},
    },
    "worker-heartbeat-outbound": {
        "task": "monitoring.heartbeat",
        "schedule": 10.0,
        "options": {"expires": 10.0, "queue": settings.OUTBOUND_QUEUE},
    },
    # Advances every running digital-twin run by one tick. Expires after one interval: a tick
    # queued behind a stopped worker is superseded by the next one instead of piling up.
    "twin-ticks": {
        "task": "simulation.schedule_ticks",
        "schedule": float(settings.TWIN_TICK_SECONDS),
        "options": {"expires": float(settings.TWIN_TICK_SECONDS)},
    },
    # The memory pool ticks between scheduler ticks (KV-cache dynamics within a placement).
    "twin-pool-ticks": {
        "task": "simulation.schedule_pool_ticks",
        "schedule": float(settings.TWIN_POOL_TICK_SECONDS),
        "options": {"expires": float(settings.TWIN_POOL_TICK_SECONDS)},
    },
    # Rollups are built once a bucket has closed: every 30 s keeps minute rollups (what
    # dashboards beyond 5 h read) at most ~2 minutes behind, and each run small.
    "rollup-compaction": {
        "task": "monitoring.compact_rollups",
        "schedule": 30.0,
        "options": {"expires": 30.0},
    },
    # Raw per-accelerator rows dominate the store; pruning every 10 minutes keeps each delete
    # small (about 10 minutes of data) instead of one huge delete a day.
    "telemetry-retention": {
        "task": "monitoring.telemetry_retention",
        "schedule": 600.0,
        "options": {"expires": 600.0},
    },
    # The allocation ledger: each ended hour is billed once from its minute detail and
    # persisted (cost.hours), so bills of past windows stop depending on what retention keeps.
    # Once a minute closes an hour within ~3 minutes of its end, well before its minute
    # frames are pruned (2 h at least); a run is a few queries per cluster when nothing is due.
    "ledger-hours-close": {
        "task": "cost.close_ledger_hours",
        "schedule": 60.0,
        "options": {"expires": 60.0},
    },
    # Alert rules over the store. 30 s keeps detection within one rule window's fraction
    # while each run stays a handful of grouped queries per rule; it expires after one period
    # because the next run re-evaluates everything anyway.
    "alert-evaluation": {
        "task": "monitoring.evaluate_alerts",
        "schedule": 30.0,
        "options": {"expires": 30.0},
    },
    # Scrape mode: checks which exporter targets are due and fans out one scrape each. 5 s is
    # the smallest target interval allowed, so no target waits more than 5 s past its own
    # interval; the check itself is one small query. Expires after one period like the rest.
    "exporter-scrapes": {
        "task": "monitoring.scrape_due_targets",
        "schedule": 5.0,
        "options": {"expires": 5.0},
    },
    # Gate analyses: one measurement per due criterion of each running analysis run. 10 s is
    # finer than the smallest criterion interval (5 s is allowed, 30 s is the default), so a
    # measurement is at most 10 s late; a duplicate run measures nothing twice (each step
    # re-checks what is due under the plan's row lock). Expires after one period.
    "rollout-analyses": {
        "task": "rollout.measure_analyses",
        "schedule": 10.0,
        "options": {"expires": 10.0},
    },
    # Commands queue their tasks after commit and survive a broker that is down then; these
    # sweeps send what never arrived. Once a minute: a lost notification or what-if is late by
    # at most a minute past its grace (120 s, longer than a task normally waits for a worker),
    # and each run is one indexed query over the few open rows. A duplicate sends nothing
    # twice (each delivery and run is claimed by one conditional update).
    "webhook-delivery-sweep": {
        "task": "rollout.sweep_webhook_deliveries",
        "schedule": 60.0,
        "options": {"expires": 60.0},
    },
    "whatif-run-sweep": {
        "task": "simulation.sweep_whatif_runs",
        "schedule": 60.0,
        "options": {"expires": 60.0},
    },
    # PromQL data sources: register the cards each server reports and sample who holds them
    # (pod / Slurm labels → attribution intervals). The cadence is the intervals' precision
    # (docs/architecture.md §3); a minute is three queries per source and keeps showback within
    # a minute per holder change. Expires after one period: each run observes "now".
    "promql-source-sync": {
        "task": "monitoring.promql_sources_sync",
        "schedule": float(settings.PROMQL_SYNC_SECONDS),
        "options": {"expires": float(settings.PROMQL_SYNC_SECONDS)},
    },
    # Scheduler sources (Slurm through slurmrestd): jobs, nodes and partitions. Incremental
    # (jobs since the last poll; an idle controller answers 304), so half a minute costs three
    # small calls per source and keeps "who holds which card" within a sync of the scheduler.
    "scheduler-source-sync": {
        "task": "scheduling.scheduler_sources_sync",
        "schedule": float(settings.SCHEDULER_SYNC_SECONDS),
        "options": {"expires": float(settings.SCHEDULER_SYNC_SECONDS)},
    },
    # Day/night calendars on Kueue change a ClusterQueue quota at each window boundary, and
    # on Slurm defer the training jobs submitted since the calendar was applied (the DAILY
    # reservation repeats by itself, a deferral is per job): a check every 5 minutes puts a
    # change at most that late. Idempotent: a deferred job is never picked again.
    "calendar-windows-follow": {
        "task": "scheduling.calendar_windows_follow",
        "schedule": 300.0,
        "options": {"expires": 120.0},
    },
}
