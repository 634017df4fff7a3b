from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TelemetryConfig(AppConfig):
    """Metric catalogue, entities, the store, ingestion, scraping and the one read API."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "telemetry"
    verbose_name = _("Telemetry")

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        post_migrate.connect(_catalogue_after_migrate, sender=self)


def _catalogue_after_migrate(**_: object) -> None:
    from telemetry.catalogue import catalogue_sync

    catalogue_sync()
