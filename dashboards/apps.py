from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DashboardsConfig(AppConfig):
    """Operator and customer pages and their payloads (no models of its own)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "dashboards"
    verbose_name = _("Dashboards")
