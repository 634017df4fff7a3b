"""Running totals of what the store committed, for ``/metrics`` counters (issue 34, item 4)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class StoreCounter(models.Model):
    """One shard of a running total (``name``: what is counted), added to in the same
    transaction as the rows it counts — so a rolled-back or killed write counts nothing and a
    committed one is counted once, whichever process or machine wrote it. Why shards: one row
    per counter would make every concurrent writer queue on its lock until commit; a writer
    adds to the shard of its process id, and ``/metrics`` sums the shards."""

    name = models.CharField(_("counter"), max_length=60)
    shard = models.PositiveSmallIntegerField(_("shard"))
    value = models.PositiveBigIntegerField(_("value"), default=0)

    class Meta:
        db_table = "monitoring_storecounter"  # every telemetry table keeps the old prefix
        ordering = ["name", "shard"]
        verbose_name = _("store counter")
        verbose_name_plural = _("store counters")
        constraints = [
            models.UniqueConstraint(fields=["name", "shard"], name="store_counter_unique_shard")
        ]

    def __str__(self) -> str:
        return f"{self.name}[{self.shard}] = {self.value}"
