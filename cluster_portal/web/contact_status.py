"""The last outcome of something the portal contacts or hears from (a PromQL server, a
scheduler, an exporter target, a remote-write sender), kept in the same three fields everywhere
so pages, the API and alerts read one shape."""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class ContactStatus(models.Model):
    """Abstract: when the last exchange succeeded, when one last failed and why. A failure keeps
    the last success (an operator sees how long the source has been down); a success clears the
    error."""

    last_success_at = models.DateTimeField(_("last success"), null=True, blank=True)
    last_error_at = models.DateTimeField(_("last error at"), null=True, blank=True)
    last_error = models.TextField(_("last error"), blank=True)

    class Meta:
        abstract = True

    def record_contact_error(self, message: str, *, now: datetime | None = None) -> None:
        """Write the failure on this row alone: an UPDATE of these two fields, so a concurrent
        edit of the row's settings is not overwritten and nothing else of the caller's is."""
        now = now or timezone.now()
        type(self).objects.filter(pk=self.pk).update(last_error=message, last_error_at=now)
        self.last_error, self.last_error_at = message, now
