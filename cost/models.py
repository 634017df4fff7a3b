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
