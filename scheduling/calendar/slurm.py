"""Apply a calendar revision to Slurm and read every change back.

Three steps, in this order so that a missing right is found before anything changes:

1. **Preflight**: an empty update (``POST /slurm/v0.0.38/job/<id>`` with ``{}``) of the first
   job to defer. It changes nothing; slurmrestd refuses it with error 2010 ("Invalid user id")
   when the token's user lacks ``AdminLevel=Operator`` for other users' jobs — then nothing is
   changed and the application says so.
2. **The DAILY reservation** of the inference nodes, through ``scontrol`` (REST v0.0.38 can
   read reservations but not create them), run with a deadline under munge as the portal's
   own user; times are passed in UTC (``TZ=UTC``: scontrol parses them itself). Flags
   ``DAILY,MAGNETIC,IGNORE_JOBS``: repeats every day, jobs of the inference accounts land in
   it without naming it, and running jobs do not block its creation. Read back from
   ``/slurm/v0.0.38/reservations``.
3. **Deferral**: in the day window, each pending job of a training partition asking at least
   ``defer_min_cards`` cards gets ``begin_time`` = the night's start (sent relative,
   ``now+<s>seconds``: slurmrestd parses absolute times in its own time zone), read back as
   the job's ``eligible_time``.

Training jobs submitted on later days are deferred by the calendar's follow-up
(:func:`defer_pending`, step 3 alone, from ``calendar_windows_follow`` every few minutes).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.utils.translation import gettext as _

from scheduling.calendar.windows import DayWindow
from scheduling.slurm.client import SchedulerError, SlurmClient
from scheduling.slurm.notation import NotationError, expand_hostlist, parse_tres_gres

API = "/slurm/v0.0.38"
RESERVATION_FLAGS = ("DAILY", "MAGNETIC", "IGNORE_JOBS")
NO_RIGHTS = 2010  # slurmrestd's "Invalid user id": the token's user may not touch that job
# Slurm keeps times in whole seconds; a relative begin_time lands within the request's
# round trip of the asked moment.
BEGIN_TOLERANCE_S = 120
SCONTROL_DEADLINE_S = 20.0


class ApplyRefused(Exception):
    """The scheduler refused the first change for want of rights: nothing was changed."""


@dataclass
class SlurmPlan:
    """What one application asks of Slurm (computed from a revision and the synced nodes)."""

    reservation: str
    window: DayWindow
    nodes: list[str]
    accounts: list[str]
    partition: str
    training_partitions: list[str]
    defer_min_cards: int
    slurm_conf: str = ""
    steps: list[dict] = field(default_factory=list)


def reservation_name(cluster_name: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in cluster_name)
    return f"portal-day-{safe}"[:60]


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _iso_utc(moment: datetime) -> str:
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds")


def _scontrol(args: list[str], *, slurm_conf: str) -> tuple[bool, str]:
    env = {**os.environ, "TZ": "UTC"}
    if slurm_conf:
        env["SLURM_CONF"] = slurm_conf
    try:
        done = subprocess.run(
            ["scontrol", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=SCONTROL_DEADLINE_S,
            check=False,
        )
    except FileNotFoundError:
        return False, _("scontrol is not installed on the portal's host.")
    except subprocess.TimeoutExpired:
        return False, _("scontrol did not answer within %(s)s s.") % {"s": SCONTROL_DEADLINE_S}
    text = (done.stdout + done.stderr).strip()
    return done.returncode == 0, text[:500]


def _reservations(client: SlurmClient) -> dict[str, dict]:
    answer = client.get(f"{API}/reservations") or {}
    items = answer.get("reservations")
    if not isinstance(items, list):
        raise SchedulerError(_("/reservations: no reservations list in the answer."))
    return {r["name"]: r for r in items if isinstance(r, dict) and isinstance(r.get("name"), str)}


def _confirmed_reservation(item: dict | None) -> dict | None:
    if item is None:
        return None
    try:
        nodes = expand_hostlist(item.get("node_list") or "")
    except NotationError:
        nodes = [str(item.get("node_list"))]
    start, end = item.get("start_time"), item.get("end_time")
    return {
        "start": start,
        "duration_minutes": (end - start) // 60
        if isinstance(start, int) and isinstance(end, int)
        else None,
        "nodes": sorted(nodes),
        "accounts": sorted(a for a in str(item.get("accounts") or "").split(",") if a),
        "flags": sorted(f for f in item.get("flags") or [] if f in RESERVATION_FLAGS),
        "partition": item.get("partition") or "",
    }


def _job_cards(item: dict) -> int:
    for key in ("tres_per_job", "tres_per_node"):
        try:
            counts = parse_tres_gres(item.get(key) or "")
        except NotationError:
            continue
        if counts:
            per = sum(counts.values())
            nodes = item.get("node_count") or {}
            count = nodes.get("number", 1) if isinstance(nodes, dict) else 1
            return per * (count if key == "tres_per_node" else 1)
    return 0


def eligible_jobs(answer: dict, plan: SlurmPlan, night_start: datetime) -> list[dict]:
    """Pending jobs of the training partitions, big enough, not already beginning at night."""
    chosen = []
    for item in answer.get("jobs") or []:
        if not isinstance(item, dict) or item.get("job_state") != "PENDING":
            continue
        partitions = str(item.get("partition") or "").split(",")
        if not set(partitions) & set(plan.training_partitions):
            continue
        if _job_cards(item) < plan.defer_min_cards:
            continue
        if (item.get("eligible_time") or 0) >= _epoch(night_start) - BEGIN_TOLERANCE_S:
            continue
        chosen.append(item)
    return sorted(chosen, key=lambda j: j["job_id"])


def pending_to_defer(client: SlurmClient, plan: SlurmPlan, *, now: datetime) -> list[dict]:
    """The pending jobs a deferral would move now (none at night): a read, nothing changed."""
    night_start = plan.window.night_start(now)
    if night_start is None or not plan.training_partitions:
        return []
    return eligible_jobs(client.get(f"{API}/jobs") or {}, plan, night_start)


def _preflight(client: SlurmClient, job: dict) -> None:
    try:
        client.post(f"{API}/job/{job['job_id']}", {})
    except SchedulerError as exc:
        if NO_RIGHTS in exc.error_numbers:
            raise ApplyRefused(
                _(
                    "The scheduler token's user may not update other users' jobs "
                    "(Slurm needs AdminLevel=Operator): %(why)s"
                )
                % {"why": exc}
            ) from None
        raise


def apply_slurm(client: SlurmClient, plan: SlurmPlan, *, now: datetime) -> list[dict]:
    """Run the three steps; answers the step list (asked vs confirmed). Raises
    :class:`ApplyRefused` when the first change is refused for rights (nothing changed) and
    :class:`SchedulerError` when the scheduler cannot be read at all before any change."""
    jobs = pending_to_defer(client, plan, now=now)
    if jobs:
        _preflight(client, jobs[0])
    steps = [_apply_reservation(client, plan, now=now, first=not jobs)]
    night_start = plan.window.night_start(now)
    for item in jobs:
        steps.append(_defer(client, item, night_start, now=now))
    return steps


def defer_pending(client: SlurmClient, plan: SlurmPlan, *, now: datetime) -> list[dict]:
    """Step 3 alone, for jobs submitted after the calendar was applied (the DAILY reservation
    repeats by itself; a deferral is per job): the same preflight, then each eligible job's
    deferral, read back. Idempotent: a deferred job's ``eligible_time`` already lies in the
    night, so :func:`eligible_jobs` never picks it again, whoever deferred it."""
    jobs = pending_to_defer(client, plan, now=now)
    if not jobs:
        return []
    _preflight(client, jobs[0])
    night_start = plan.window.night_start(now)
    return [_defer(client, item, night_start, now=now) for item in jobs]


def _apply_reservation(client: SlurmClient, plan: SlurmPlan, *, now: datetime, first: bool):
    start = plan.window.next_day_start(now)
    minutes = int(plan.window.duration.total_seconds() // 60)
    asked = {
        "start": _epoch(start),
        "duration_minutes": minutes,
        "nodes": sorted(plan.nodes),
        "accounts": sorted(plan.accounts),
        "flags": sorted(RESERVATION_FLAGS),
        "partition": plan.partition,
    }
    step = {
        "kind": "reservation",
        "target": plan.reservation,
        "asked": asked,
        "confirmed": None,
        "ok": False,
        "error": "",
    }
    if not plan.nodes:
        step["error"] = _("No nodes to reserve: partition %(p)s has no synced nodes.") % {
            "p": plan.partition
        }
        return step
    existing = _reservations(client).get(plan.reservation)
    settings = [
        f"StartTime={_iso_utc(start)}",
        f"Duration={minutes}",
        f"Nodes={','.join(plan.nodes)}",
        f"Accounts={','.join(plan.accounts)}",
        f"PartitionName={plan.partition}",
    ]
    if existing is None:
        args = [
            "create",
            "reservation",
            f"ReservationName={plan.reservation}",
            *settings,
            f"Flags={','.join(RESERVATION_FLAGS)}",
        ]
    else:
        args = ["update", f"ReservationName={plan.reservation}", *settings]
    ok, text = _scontrol(args, slurm_conf=plan.slurm_conf)
    if not ok:
        if first and ("Invalid user id" in text or "Access" in text and "denied" in text):
            raise ApplyRefused(
                _(
                    "scontrol may not change reservations as the portal's user (Slurm needs "
                    "an operator or SlurmUser): %(why)s"
                )
                % {"why": text}
            )
        step["error"] = _("scontrol refused: %(why)s") % {"why": text}
    step["confirmed"] = _confirmed_reservation(_reservations(client).get(plan.reservation))
    step["ok"] = ok and step["confirmed"] == asked
    if ok and not step["ok"]:
        step["error"] = _("The reservation read back differs from what was asked.")
    return step


def _defer(client: SlurmClient, item: dict, night_start: datetime, *, now: datetime) -> dict:
    job_id = item["job_id"]
    seconds = max(0, int((night_start - now).total_seconds()))
    step = {
        "kind": "defer",
        "target": str(job_id),
        "asked": {
            "begin": _epoch(night_start),
            "account": item.get("account") or "",
            "partition": item.get("partition") or "",
        },
        "confirmed": None,
        "ok": False,
        "error": "",
    }
    try:
        client.post(f"{API}/job/{job_id}", {"begin_time": f"now+{seconds}seconds"})
    except SchedulerError as exc:
        step["error"] = str(exc)
    try:
        answer = client.get(f"{API}/job/{job_id}") or {}
        back = (answer.get("jobs") or [{}])[0]
    except SchedulerError as exc:
        step["error"] = step["error"] or str(exc)
        return step
    eligible = back.get("eligible_time")
    step["confirmed"] = {
        "begin": eligible,
        "state": back.get("job_state"),
        "reason": back.get("state_reason"),
    }
    step["ok"] = (
        isinstance(eligible, int) and abs(eligible - _epoch(night_start)) <= BEGIN_TOLERANCE_S
    )
    if not step["ok"] and not step["error"]:
        step["error"] = _("The job's begin time read back differs from what was asked.")
    return step
