from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SimulationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "simulation"
    verbose_name = _("Digital twin")

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from simulation.services.runs import (
            engine_catalogue_after_migrate,
            hardware_catalog_after_migrate,
        )

        # The hardware catalogue comes from the engine's (figures cited in its README); monitoring
        # cannot import the engine, so the twin app seeds it.
        post_migrate.connect(hardware_catalog_after_migrate, sender=self)
        # The engine's metrics (TTFT/TPOT, backlog, timeouts...) are in the catalogue from
        # the first migrate, so gate criteria and alert rules can name them before any tick.
        post_migrate.connect(engine_catalogue_after_migrate, sender=self)

        from dashboards.report_sources import ablation_provider_register
        from simulation.selectors import latest_whatif_ablation

        # The validation report shows which mechanism contributed what (the what-if ablation).
        ablation_provider_register(latest_whatif_ablation)

        from rollout.analysis.scaling import scaling_provider_register
        from simulation.scaling import twin_scaling

        # Relative gate criteria expect what the move should give on the target's accelerator:
        # the twin's model of both (rollout cannot import this app).
        scaling_provider_register(twin_scaling)
