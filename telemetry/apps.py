from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TelemetryConfig(AppConfig):
    """Metric catalogue, entities, the store, ingestion, scraping and the one read API."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "telemetry"
    verbose_name = _("Telemetry")

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from inventory.signals import nodes_placed
        from telemetry.catalogue.entities import entities_on_nodes_placed

        post_migrate.connect(_catalogue_after_migrate, sender=self)
        nodes_placed.connect(entities_on_nodes_placed, dispatch_uid="telemetry.entities_path_sync")


def _catalogue_after_migrate(**_: object) -> None:
    from telemetry.catalogue.metrics import catalogue_sync

    catalogue_sync()
