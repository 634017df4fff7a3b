"""Commands on a cluster's day/night window calendar: request a revision, approve or reject
it (four eyes: never the requester; bound to the revision the approver saw), and apply the
approved newest revision to the scheduler, reading every change back.

Every command and every refusal leaves a :class:`CalendarAuditEntry`; a refusal's row is
committed in its own transaction, so it survives the refused command. Applying talks to the
scheduler outside any transaction (scontrol and slurmrestd have their own deadlines): the
application row is committed as *running* first and finished afterwards.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from rest_framework.exceptions import APIException

from accounts.services.actor import Actor
from inventory.models import Cluster
from scheduling.calendar.kueue import apply_kueue_quota
from scheduling.calendar.slurm import (
    ApplyRefused,
    SlurmPlan,
    apply_slurm,
    reservation_name,
)
from scheduling.calendar.windows import DayWindow
from scheduling.kubernetes.client import KubernetesClient
from scheduling.models import SchedulerPartition, SchedulerSource
from scheduling.models_calendar import (
    CalendarApplication,
    CalendarAuditEntry,
    CalendarRevision,
    WindowCalendar,
)
from scheduling.slurm.client import SchedulerError, SlurmClient

# What a request may set (everything else is the workflow's).
REVISION_FIELDS = (
    "timezone",
    "day_start",
    "day_end",
    "inference_partition",
    "inference_nodes",
    "inference_accounts",
    "training_partitions",
    "defer_min_cards",
    "slurm_conf",
    "cluster_queue",
    "flavor",
    "resource",
    "day_quota",
    "night_quota",
)
# An application still "running" after this long died with its process: a new one may start.
STALE_APPLICATION = timedelta(minutes=10)


class CalendarNotPermitted(APIException):
    """The principal lacks the role the command needs, or would approve their own request."""

    status_code = 403
    default_detail = gettext_lazy("You may not do this to the calendar.")
    default_code = "calendar_not_permitted"


class CalendarConflict(APIException):
    """The calendar is not in a state for this (another revision, not approved, running)."""

    status_code = 409
    default_detail = gettext_lazy("The calendar changed; reload.")
    default_code = "calendar_conflict"


def calendar_of(cluster: Cluster) -> WindowCalendar:
    calendar, _created = WindowCalendar.objects.get_or_create(cluster=cluster)
    return calendar


def _audit(
    *, calendar: WindowCalendar, actor: Actor, action: str, revision: int | None, reason: str = ""
) -> CalendarAuditEntry:
    return CalendarAuditEntry.objects.create(
        calendar=calendar,
        revision=revision,
        actor=actor.user,
        actor_label=actor.label,
        action=action,
        reason=reason[:2000],
        source_ip=actor.ip,
    )


def _deny(
    *,
    calendar: WindowCalendar,
    actor: Actor,
    action: str,
    revision: int | None,
    refusal: APIException,
) -> None:
    with transaction.atomic():
        _audit(
            calendar=calendar,
            actor=actor,
            action=f"{action}_denied",
            revision=revision,
            reason=str(refusal.detail),
        )
    raise refusal


def _require_role(
    *,
    calendar: WindowCalendar,
    allowed: bool,
    actor: Actor,
    action: str,
    revision: int | None,
    why: str,
) -> None:
    """Refuse (audited, 403 saying ``why``) unless the principal holds the command's role."""
    if not allowed:
        _deny(
            calendar=calendar, actor=actor, action=action, revision=revision,
            refusal=CalendarNotPermitted(why),
        )  # fmt: skip


def _require_newest(calendar: WindowCalendar, expected_revision: int) -> CalendarRevision:
    if expected_revision != calendar.revision:
        raise CalendarConflict(
            _("The calendar is at revision %(now)s; you decided on revision %(sent)s. Reload.")
            % {"now": calendar.revision, "sent": expected_revision}
        )
    return calendar.revisions.get(number=calendar.revision)


def _lock_newest(
    calendar: WindowCalendar, expected_revision: int, state: str, wrong_state: str
) -> tuple[WindowCalendar, CalendarRevision]:
    """The calendar row locked and its newest revision, which must be the one decided on and
    in ``state`` (else a conflict saying ``wrong_state``); inside the caller's transaction."""
    calendar = WindowCalendar.objects.select_for_update().get(pk=calendar.pk)
    revision = _require_newest(calendar, expected_revision)
    if revision.state != state:
        raise CalendarConflict(
            wrong_state % {"n": revision.number, "state": revision.get_state_display()}
        )
    return calendar, revision


def calendar_request(
    *, cluster: Cluster, actor: Actor, reason: str = "", **fields: object
) -> CalendarRevision:
    """A new revision (proposed); every older undecided or approved one is superseded, so an
    approval never carries over to a calendar the approver did not see."""
    unknown = set(fields) - set(REVISION_FIELDS)
    if unknown:
        raise ValidationError({name: _("Not a calendar field.") for name in sorted(unknown)})
    calendar = calendar_of(cluster)
    _require_role(
        calendar=calendar, allowed=actor.can_operate(), actor=actor, action="request",
        revision=None, why=_("Only a signed-in operator may propose a calendar."),
    )  # fmt: skip
    with transaction.atomic():
        calendar = WindowCalendar.objects.select_for_update().get(pk=calendar.pk)
        revision = CalendarRevision(
            calendar=calendar,
            number=calendar.revision + 1,
            requested_by=actor.user,
            reason=reason,
            **fields,
        )
        revision.full_clean(exclude=["calendar"])
        calendar.revisions.filter(
            state__in=[CalendarRevision.State.PROPOSED, CalendarRevision.State.APPROVED]
        ).update(state=CalendarRevision.State.SUPERSEDED)
        revision.save()
        calendar.revision = revision.number
        calendar.save(update_fields=["revision"])
        _audit(
            calendar=calendar,
            actor=actor,
            action="request",
            revision=revision.number,
            reason=reason,
        )
    return revision


def _decide(
    *, cluster: Cluster, actor: Actor, expected_revision: int, note: str, approve: bool
) -> CalendarRevision:
    action = "approve" if approve else "reject"
    calendar = calendar_of(cluster)
    _require_role(
        calendar=calendar, allowed=actor.can_approve(), actor=actor, action=action,
        revision=expected_revision, why=_("Only an approver may decide on a calendar."),
    )  # fmt: skip
    with transaction.atomic():
        calendar, revision = _lock_newest(
            calendar, expected_revision, CalendarRevision.State.PROPOSED,
            _("Revision %(n)s is %(state)s, not awaiting a decision."),
        )  # fmt: skip
        if revision.requested_by_id is not None and revision.requested_by_id == getattr(
            actor.user, "pk", None
        ):
            refusal = CalendarNotPermitted(
                _("Four eyes: the operator who requested revision %(n)s may not decide on it.")
                % {"n": revision.number}
            )
        else:
            refusal = None
            revision.state = (
                CalendarRevision.State.APPROVED if approve else CalendarRevision.State.REJECTED
            )
            revision.decided_by, revision.decided_at = actor.user, timezone.now()
            revision.decision_note = note
            revision.save(update_fields=["state", "decided_by", "decided_at", "decision_note"])
            _audit(
                calendar=calendar, actor=actor, action=action, revision=revision.number, reason=note
            )
    if refusal is not None:
        _deny(
            calendar=calendar,
            actor=actor,
            action=action,
            revision=expected_revision,
            refusal=refusal,
        )
    return revision


def calendar_approve(
    *, cluster: Cluster, actor: Actor, expected_revision: int, note: str = ""
) -> CalendarRevision:
    return _decide(
        cluster=cluster, actor=actor, expected_revision=expected_revision, note=note, approve=True
    )


def calendar_reject(
    *, cluster: Cluster, actor: Actor, expected_revision: int, note: str = ""
) -> CalendarRevision:
    return _decide(
        cluster=cluster, actor=actor, expected_revision=expected_revision, note=note, approve=False
    )


def revision_window(revision: CalendarRevision) -> DayWindow:
    return DayWindow(revision.day_start, revision.day_end, revision.timezone)


def _run_steps(source: SchedulerSource, revision: CalendarRevision, now: datetime) -> list[dict]:
    if source.kind == SchedulerSource.Kind.KUBERNETES:
        if not revision.cluster_queue:
            raise SchedulerError(
                _("This cluster runs Kubernetes: the calendar names no ClusterQueue to apply.")
            )
        client = KubernetesClient(
            base_url=source.base_url, token_env=source.token_env, timeout=source.timeout_seconds
        )
        return [
            apply_kueue_quota(
                client,
                cluster_queue=revision.cluster_queue,
                flavor=revision.flavor,
                resource=revision.resource,
                day_quota=revision.day_quota,
                night_quota=revision.night_quota,
                window=revision_window(revision),
                now=now,
            )
        ]
    if not revision.inference_partition:
        raise SchedulerError(
            _("This cluster runs Slurm: the calendar names no inference partition to reserve.")
        )
    return apply_slurm(slurm_client_of(source), slurm_plan_of(source, revision), now=now)


def slurm_plan_of(source: SchedulerSource, revision: CalendarRevision) -> SlurmPlan:
    nodes = list(revision.inference_nodes)
    if not nodes:
        partition = SchedulerPartition.objects.filter(
            source=source, name=revision.inference_partition
        ).first()
        nodes = list(partition.nodes) if partition else []
    return SlurmPlan(
        reservation=reservation_name(source.cluster.name),
        window=revision_window(revision),
        nodes=nodes,
        accounts=list(revision.inference_accounts),
        partition=revision.inference_partition,
        training_partitions=list(revision.training_partitions),
        defer_min_cards=revision.defer_min_cards,
        slurm_conf=revision.slurm_conf,
    )


def slurm_client_of(source: SchedulerSource) -> SlurmClient:
    return SlurmClient(
        base_url=source.base_url,
        user_name=source.user_name,
        token_env=source.token_env,
        timeout=source.timeout_seconds,
    )


def application_start(
    calendar: WindowCalendar, revision: CalendarRevision, actor: Actor, action: str
) -> CalendarApplication:
    """The application row, committed as *running* by the caller's transaction (which holds
    the calendar's row lock): it is also the lease that keeps a second worker from talking to
    the scheduler for the same calendar until it is finished or :data:`STALE_APPLICATION`."""
    running = CalendarApplication.objects.filter(
        revision__calendar=calendar,
        outcome=CalendarApplication.Outcome.RUNNING,
        started_at__gt=timezone.now() - STALE_APPLICATION,
    )
    if running.exists():
        raise CalendarConflict(_("An application of this calendar is still running."))
    application = CalendarApplication.objects.create(revision=revision, applied_by=actor.user)
    _audit(calendar=calendar, actor=actor, action=action, revision=revision.number)
    return application


def application_finish(
    application: CalendarApplication,
    *,
    calendar: WindowCalendar,
    actor: Actor,
    action: str,
    run,
) -> CalendarApplication:
    """Call ``run()`` (the scheduler steps, outside any transaction), then record the
    outcome; the calendar's applied revision moves only when an ``apply`` confirmed every
    step (a follow-up's deferrals never move it)."""
    revision = application.revision
    outcome, message, steps = CalendarApplication.Outcome.FAILED, "", []
    try:
        steps = run()
    except ApplyRefused as exc:
        outcome, message = CalendarApplication.Outcome.REFUSED, str(exc)
    except SchedulerError as exc:
        message = str(exc)
    else:
        confirmed = all(step["ok"] for step in steps)
        outcome = (
            CalendarApplication.Outcome.CONFIRMED
            if confirmed
            else CalendarApplication.Outcome.PARTIAL
            if any(s["ok"] for s in steps)
            else CalendarApplication.Outcome.FAILED
        )
        message = "; ".join(s["error"] for s in steps if s["error"])
    with transaction.atomic():
        application.outcome, application.message, application.steps = outcome, message, steps
        application.finished_at = timezone.now()
        application.save(update_fields=["outcome", "message", "steps", "finished_at"])
        if outcome == CalendarApplication.Outcome.CONFIRMED and action == "apply":
            WindowCalendar.objects.filter(pk=calendar.pk).update(applied=revision)
        _audit(
            calendar=calendar,
            actor=actor,
            action=f"{action}_{outcome}",
            revision=revision.number,
            reason=message,
        )
    return application


def calendar_apply(
    *, cluster: Cluster, actor: Actor, expected_revision: int, now: datetime | None = None
) -> CalendarApplication:
    """Apply the approved newest revision; the application records each step asked vs
    confirmed. A scheduler that refuses for want of rights leaves the outcome *refused*
    (nothing was changed); the calendar's applied revision moves only when every step is
    confirmed."""
    calendar = calendar_of(cluster)
    _require_role(
        calendar=calendar, allowed=actor.can_operate(), actor=actor, action="apply",
        revision=expected_revision, why=_("Only a signed-in operator may apply a calendar."),
    )  # fmt: skip
    with transaction.atomic():
        calendar, revision = _lock_newest(
            calendar, expected_revision, CalendarRevision.State.APPROVED,
            _("Revision %(n)s is %(state)s: only an approved revision is applied."),
        )  # fmt: skip
        source = SchedulerSource.objects.filter(cluster=cluster, enabled=True).first()
        if source is None:
            raise CalendarConflict(_("The cluster has no enabled scheduler source."))
        application = application_start(calendar, revision, actor, "apply")
    moment = now or timezone.now()
    return application_finish(
        application, calendar=calendar, actor=actor, action="apply",
        run=lambda: _run_steps(source, revision, moment),
    )  # fmt: skip


def calendar_whatif_record(
    *, revision_id: int, state: str, result: dict | None = None, error: str = ""
) -> None:
    """Store a revision's what-if state (queued, done with its figures, failed with why): one
    UPDATE of that field, so a decision taken meanwhile is not overwritten."""
    whatif = {
        "state": state,
        "at": timezone.now().isoformat(),
        "result": result,
        "error": error[:1000],
    }
    CalendarRevision.objects.filter(pk=revision_id).update(whatif=whatif)
