"""Operator-editable inputs of the cost model (docs/architecture.md §6).

One row with no cluster is the global default; a row per cluster overrides it for that
cluster. Validation lives here (field validators, ``clean()`` and database constraints) so
the admin, the cost page's form and any future API reuse it.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

PUE_MIN, PUE_MAX = 1.0, 3.0


class CostAssumptions(models.Model):
    """Prices, lifetimes and shares the cost figures are computed from.

    Defaults are public list-price orders of magnitude for an H100-class card; Ascend prices
    are not public, so any Ascend figure is an assumption and the page says so.
    """

    cluster = models.OneToOneField(
        "inventory.Cluster",
        verbose_name=_("cluster"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="cost_assumptions",
        help_text=_("Empty: the global default used by every cluster without its own row."),
    )
    currency = models.CharField(_("currency"), max_length=3, default="USD")
    card_price = models.FloatField(
        _("price per accelerator card"),
        default=30000.0,
        validators=[MinValueValidator(0.01)],
    )
    other_capex_share = models.FloatField(
        _("servers, network and other capex (share of card price)"),
        default=0.6,
        validators=[MinValueValidator(0.0), MaxValueValidator(10.0)],
        help_text=_("0.6 means every card brings 60 percent of its price again in servers etc."),
    )
    amortisation_years = models.FloatField(
        _("amortisation life (years)"),
        default=4.0,
        validators=[MinValueValidator(0.5), MaxValueValidator(20.0)],
    )
    electricity_price_per_kwh = models.FloatField(
        _("electricity price per kWh"),
        default=0.10,
        validators=[MinValueValidator(0.0001)],
    )
    pue = models.FloatField(
        _("PUE"),
        default=1.3,
        validators=[MinValueValidator(PUE_MIN), MaxValueValidator(PUE_MAX)],
        help_text=_("Facility power / IT power, between 1.0 and 3.0."),
    )
    load_factor = models.FloatField(
        _("load factor (share of TDP)"),
        default=0.7,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text=_("Used only where no power telemetry is stored: power = TDP × load factor."),
    )
    operations_per_card_year = models.FloatField(
        _("operations cost per card-year"),
        default=1500.0,
        validators=[MinValueValidator(0.0)],
    )
    # Empty budget / migration cost: a per-card assumption applies (cost.model), and every
    # page that uses it says it is one. Zero was the old default and made payback "0 months".
    budget = models.FloatField(
        _("budget for the unified cluster"),
        null=True,
        blank=True,
        default=None,
        validators=[MinValueValidator(0.0)],
        help_text=_(
            "Empty: assumed at 80 percent of the unified cluster's list capex (shown as an "
            "assumption)."
        ),
    )
    reused_hardware_share = models.FloatField(
        _("share of existing hardware reused"),
        default=0.0,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
    )
    migration_cost = models.FloatField(
        _("one-off migration cost"),
        null=True,
        blank=True,
        default=None,
        validators=[MinValueValidator(0.0)],
        help_text=_(
            "Engineering, dual running and cut-over: what the payback has to recover. Empty: "
            "assumed at 1,500 per card of the unified cluster (shown as an assumption)."
        ),
    )
    is_assumption = models.BooleanField(
        _("prices are assumptions"),
        default=True,
        help_text=_("Tick while prices are estimates (e.g. Ascend prices are not public)."),
    )
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        db_table = "monitoring_costassumptions"  # kept from before the app split
        ordering = ["cluster__name"]
        verbose_name = _("cost assumptions")
        verbose_name_plural = _("cost assumptions")
        constraints = [
            # NULLs are distinct in unique indexes, so the single global row needs its own rule.
            models.UniqueConstraint(
                fields=["cluster"],
                condition=Q(cluster__isnull=True),
                name="costassumptions_one_global",
            ),
            models.CheckConstraint(
                condition=Q(pue__gte=PUE_MIN) & Q(pue__lte=PUE_MAX), name="costassumptions_pue"
            ),
            models.CheckConstraint(
                condition=Q(card_price__gt=0)
                & Q(electricity_price_per_kwh__gt=0)
                & Q(amortisation_years__gt=0),
                name="costassumptions_positive_prices",
            ),
            models.CheckConstraint(
                condition=Q(reused_hardware_share__gte=0) & Q(reused_hardware_share__lte=1),
                name="costassumptions_reuse_share",
            ),
        ]

    def __str__(self) -> str:
        return self.cluster.name if self.cluster_id else str(_("global default"))

    def clean(self) -> None:
        super().clean()
        if self.currency and not (len(self.currency) == 3 and self.currency.isalpha()):
            raise ValidationError({"currency": _("Use a three-letter ISO 4217 code, e.g. USD.")})
        self.currency = (self.currency or "").upper()


class LedgerHour(models.Model):
    """One closed hour of a cluster's allocation ledger, written once the hour has closed.

    Bills of past windows are sums of these rows, so a closed hour reads the same through a
    24 h and a 7-day window and does not change as telemetry ages and its minute rollups are
    pruned. A row is revised only when late telemetry changes its figures while that hour's
    minute data is still kept; ``revision`` counts those revisions (0: as first closed).
    Amounts are whole cents of ``currency``: ``billed_cents + idle_cents = cost_cents``, and
    idle splits into ``allocated_idle_cents`` (cards held by a scheduler job but idle, per
    holder in :class:`LedgerIdleLine`) and the unallocated rest.
    """

    cluster = models.ForeignKey(
        "inventory.Cluster",
        verbose_name=_("cluster"),
        on_delete=models.CASCADE,
        related_name="ledger_hours",
    )
    hour = models.DateTimeField(_("hour (start, UTC)"))
    currency = models.CharField(_("currency"), max_length=3)
    cards = models.PositiveIntegerField(_("cards"))
    per_hour = models.FloatField(_("asset cost per hour"))
    covered_seconds = models.FloatField(_("seconds covered by telemetry"))
    capacity_card_seconds = models.FloatField(_("capacity (card-seconds)"))
    held_card_seconds = models.FloatField(_("card-seconds held, as measured"))
    cost_cents = models.BigIntegerField(_("asset cost (cents)"))
    billed_cents = models.BigIntegerField(_("billed (cents)"))
    idle_cents = models.BigIntegerField(_("idle (cents)"))
    allocated_idle_cents = models.BigIntegerField(
        _("allocated idle (cents)"),
        default=0,
        help_text=_(
            "The part of idle on cards a scheduler job held while they read idle (charged to "
            "the holders); the rest of idle is unallocated (the operator's)."
        ),
    )
    overcommitted = models.BooleanField(_("over-committed"), default=False)
    unbound_card_seconds = models.FloatField(_("card-seconds no workload claimed"), default=0.0)
    ambiguous_intervals = models.PositiveIntegerField(_("ambiguous intervals"), default=0)
    revision = models.PositiveIntegerField(
        _("revision"),
        default=0,
        help_text=_("How many times late data revised this hour after it closed."),
    )
    closed_at = models.DateTimeField(_("closed at"))
    revised_at = models.DateTimeField(_("revised at"), null=True, blank=True)

    class Meta:
        ordering = ["cluster_id", "hour"]
        verbose_name = _("ledger hour")
        verbose_name_plural = _("ledger hours")
        constraints = [
            models.UniqueConstraint(fields=["cluster", "hour"], name="ledgerhour_one_per_hour"),
            models.CheckConstraint(
                condition=Q(billed_cents__gte=0)
                & Q(idle_cents__gte=0)
                & Q(cost_cents=models.F("billed_cents") + models.F("idle_cents")),
                name="ledgerhour_billed_plus_idle_is_cost",
            ),
            models.CheckConstraint(
                condition=Q(allocated_idle_cents__gte=0)
                & Q(allocated_idle_cents__lte=models.F("idle_cents")),
                name="ledgerhour_allocated_idle_within_idle",
            ),
            models.CheckConstraint(
                condition=Q(covered_seconds__gte=0) & Q(covered_seconds__lte=3600),
                name="ledgerhour_covered_within_hour",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id} {self.hour:%Y-%m-%d %H:00}"


class LedgerLine(models.Model):
    """What one workload held and is billed in one closed :class:`LedgerHour`.

    The workload's tenant is kept on the line (showback scopes by it), and so is its name,
    so a bill still reads after the workload is deleted.
    """

    hour = models.ForeignKey(
        LedgerHour, verbose_name=_("ledger hour"), on_delete=models.CASCADE, related_name="lines"
    )
    workload = models.ForeignKey(
        "inventory.Workload",
        verbose_name=_("workload"),
        null=True,
        on_delete=models.SET_NULL,
        related_name="ledger_lines",
    )
    tenant = models.ForeignKey(
        "monitoring.Tenant",
        verbose_name=_("tenant"),
        on_delete=models.CASCADE,
        related_name="ledger_lines",
    )
    workload_name = models.CharField(_("workload name"), max_length=120)
    basis = models.CharField(_("basis"), max_length=16)
    card_seconds = models.FloatField(_("card-seconds held"))
    billed_cents = models.BigIntegerField(_("billed (cents)"))

    class Meta:
        ordering = ["hour_id", "workload_id"]
        verbose_name = _("ledger line")
        verbose_name_plural = _("ledger lines")
        constraints = [
            models.UniqueConstraint(fields=["hour", "workload"], name="ledgerline_one_per_hour"),
            models.CheckConstraint(condition=Q(billed_cents__gte=0), name="ledgerline_billed"),
        ]
        indexes = [models.Index(fields=["tenant", "hour"], name="ledgerline_tenant_hour")]

    def __str__(self) -> str:
        return f"{self.workload_name} @ {self.hour_id}"


class LedgerIdleLine(models.Model):
    """One holder tenant's allocated idle in one closed :class:`LedgerHour`: the card-seconds
    its scheduler jobs held while the cards read idle, and that part of the hour's idle cost.
    The lines of an hour add up to its ``allocated_idle_cents``."""

    hour = models.ForeignKey(
        LedgerHour,
        verbose_name=_("ledger hour"),
        on_delete=models.CASCADE,
        related_name="idle_lines",
    )
    tenant = models.ForeignKey(
        "monitoring.Tenant",
        verbose_name=_("tenant"),
        on_delete=models.CASCADE,
        related_name="ledger_idle_lines",
    )
    card_seconds = models.FloatField(_("card-seconds held idle"))
    cents = models.BigIntegerField(_("allocated idle (cents)"))

    class Meta:
        ordering = ["hour_id", "tenant_id"]
        verbose_name = _("ledger idle line")
        verbose_name_plural = _("ledger idle lines")
        constraints = [
            models.UniqueConstraint(fields=["hour", "tenant"], name="ledgeridleline_one_per_hour"),
            models.CheckConstraint(
                condition=Q(cents__gte=0) & Q(card_seconds__gte=0), name="ledgeridleline_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id} idle @ {self.hour_id}"
