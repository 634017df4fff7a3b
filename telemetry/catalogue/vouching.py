"""Authoring and approving the writers a gate could count (exporter targets, PromQL data
sources, serving bindings): the four-eyes rule on evidence (issue 31 §4).

Whoever creates *or changes* such a writer becomes its author and any approval lapses (a
target re-pointed at another URL is a new writer); another operator's approval makes it
evidence on the author's own plans. Page, API and admin call these.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from telemetry.models.vouching import VouchedEvidence


def evidence_source_authored(*, source: VouchedEvidence, user_id: int | None) -> None:
    """Mark ``source`` (about to be saved, or saved) as made by ``user_id`` now, unapproved."""
    source.created_by_id = user_id
    source.created_at = timezone.now()
    source.approved_by_id = None
    source.approved_at = None


@transaction.atomic
def evidence_source_approve(*, source: VouchedEvidence, user_id: int) -> VouchedEvidence:
    """Approve ``source`` as evidence. Refused (``ValidationError``) for its own author: the
    point is a second person."""
    locked = type(source).objects.select_for_update().get(pk=source.pk)
    if locked.created_by_id is not None and locked.created_by_id == user_id:
        raise ValidationError(
            _("You made or last changed this; another operator must approve it as evidence.")
        )
    locked.approved_by_id = user_id
    locked.approved_at = timezone.now()
    locked.save(update_fields=["approved_by", "approved_at"])
    return locked


def author_id_of(principal: object) -> int | None:
    """The person behind a request: a token's owner, or the signed-in user."""
    token = getattr(principal, "token", None)
    if token is not None:
        return token.owner_id
    return getattr(principal, "pk", None)
