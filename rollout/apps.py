from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RolloutConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "rollout"
    verbose_name = _("Migrations")
