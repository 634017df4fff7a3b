"""Who made, and who approved, a writer a gate could count (issue 31 §4, the four-eyes rule on
evidence): exporter targets, PromQL data sources and serving bindings carry it.

A plan's gates count such a source only if someone other than the plan's requester created or
approved it (``telemetry.store.provenance.trust_resolve``); merely predating the plan is not
enough. Rows made before this existed (no creator, no creation time) were configured by the
portal's operators before any plan could name them and count as vouched.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class VouchedEvidence(models.Model):
    """Abstract: ``created_by``/``created_at`` set once, ``approved_by``/``approved_at`` by the
    approve action (``telemetry.catalogue.vouching.evidence_source_approve``), never by the
    creator."""

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("created or last changed by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(_("created at"), null=True, blank=True, default=timezone.now)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("approved as evidence by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    approved_at = models.DateTimeField(_("approved as evidence at"), null=True, blank=True)

    class Meta:
        abstract = True


def vouched_for(requester_id: int | None, prefix: str = "") -> Q:
    """Rows that count as evidence on a plan requested by ``requester_id``: made by someone
    else (or before creators were recorded), or approved by someone else."""
    if requester_id is None:
        return Q()
    p = prefix
    return (
        Q(**{f"{p}created_by__isnull": True})
        | ~Q(**{f"{p}created_by_id": requester_id})
        | (Q(**{f"{p}approved_by__isnull": False}) & ~Q(**{f"{p}approved_by_id": requester_id}))
    )
