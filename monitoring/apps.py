from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MonitoringConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "monitoring"
    verbose_name = _("Monitoring")

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from monitoring.alerting.defaults import alert_rules_ensure_after_migrate
        from monitoring.services.roles import roles_ensure_after_migrate

        post_migrate.connect(roles_ensure_after_migrate, sender=self)
        post_migrate.connect(_catalogue_after_migrate, sender=self)
        post_migrate.connect(alert_rules_ensure_after_migrate, sender=self)
        # Registers the OpenAPI description of token authentication with drf-spectacular.
        import monitoring.api.schema  # noqa: F401


def _catalogue_after_migrate(**_: object) -> None:
    from monitoring.telemetry.catalogue import catalogue_sync

    catalogue_sync()
