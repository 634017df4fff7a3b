from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class InventoryConfig(AppConfig):
    """Hardware models, clusters, supernodes, racks, nodes, accelerators, links, workloads."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "inventory"
    verbose_name = _("Inventory")
