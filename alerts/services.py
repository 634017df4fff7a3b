"""What an operator does with an alert: acknowledge it, or resolve it by hand.

Legal transitions: firing → acknowledged, firing → resolved, acknowledged → resolved. Anything
else raises :class:`AlertTransitionError` and changes nothing. Both services lock the alert's
row, so two operators clicking at once (or the evaluator resolving it meanwhile) cannot both
succeed; the loser gets the error, not a silent overwrite.

Resolving by hand while the condition still holds is allowed (e.g. a known, accepted
condition): the next evaluation opens a new alert with a new ``first_seen``.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from alerts.models import Alert


class AlertTransitionError(ValueError):
    """The requested change is not legal from the alert's current state."""


def _locked(alert: Alert) -> Alert:
    return Alert.objects.select_for_update().get(pk=alert.pk)


@transaction.atomic
def alert_acknowledge(*, alert: Alert, user) -> Alert:
    """Mark a firing alert as being handled by ``user``; returns the updated alert."""
    current = _locked(alert)
    if current.state == Alert.State.ACKNOWLEDGED:
        raise AlertTransitionError(_("This alert is already acknowledged."))
    if current.state == Alert.State.RESOLVED:
        raise AlertTransitionError(_("A resolved alert cannot be acknowledged."))
    current.state = Alert.State.ACKNOWLEDGED
    current.acknowledged_by = user
    current.acknowledged_at = timezone.now()
    current.save(update_fields=["state", "acknowledged_by", "acknowledged_at"])
    return current


@transaction.atomic
def alert_resolve(*, alert: Alert, user) -> Alert:
    """Close a firing or acknowledged alert on ``user``'s word; returns the updated alert."""
    current = _locked(alert)
    if current.state == Alert.State.RESOLVED:
        raise AlertTransitionError(_("This alert is already resolved."))
    current.state = Alert.State.RESOLVED
    current.resolved_by = user
    current.resolved_at = timezone.now()
    current.save(update_fields=["state", "resolved_by", "resolved_at"])
    return current
