from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.utils.translation import gettext_lazy as _


class RolloutConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "rollout"
    verbose_name = _("Migrations")

    def ready(self) -> None:
        from rollout.db_guard import register_sqlite_function

        # The SQLite audit triggers call this function (see rollout/db_guard.py).
        connection_created.connect(register_sqlite_function, dispatch_uid="rollout-audit-guard")
