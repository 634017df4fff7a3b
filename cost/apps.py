from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CostConfig(AppConfig):
    """The cost model, its inputs, and the customer and internal ledgers."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "cost"
    verbose_name = _("Cost")
