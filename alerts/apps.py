from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AlertsConfig(AppConfig):
    """Alert rules, their evaluation over telemetry, runbook hints, acknowledge/resolve."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "alerts"
    verbose_name = _("Alerts")

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from alerts.defaults import alert_rules_ensure_after_migrate

        post_migrate.connect(alert_rules_ensure_after_migrate, sender=self)
