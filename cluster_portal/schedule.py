"""Every periodic task the portal runs, with its cadence and why. Beat reads only this module.

Keep entries explicit: name, task, cadence in seconds and an ``expires`` so a backlog left by
a stopped worker is dropped instead of replayed in a burst when it returns.
"""

from __future__ import annotations

BEAT_SCHEDULE: dict[str, dict] = {
    # Proves a worker is consuming the queue; the status page shows workers whose last
    # heartbeat is older than HEARTBEAT_STALE_AFTER_SECONDS (45 s) as down. 10 s gives three
    # chances before that.
    "worker-heartbeat": {
        "task": "monitoring.heartbeat",
        "schedule": 10.0,
        "options": {"expires": 10.0},
    },
    # Raw per-accelerator rows dominate the store; pruning every 10 minutes keeps each delete
    # small (about 10 minutes of data) instead of one huge delete a day.
    "telemetry-retention": {
        "task": "monitoring.telemetry_retention",
        "schedule": 600.0,
        "options": {"expires": 600.0},
    },
}
