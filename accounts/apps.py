from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    """Tenants, users, roles and integration tokens.

    The app keeps the historical label ``monitoring``: the custom user model
    (``AUTH_USER_MODEL = "monitoring.User"``) cannot change app label without rewriting every
    applied migration that depends on it (Django's own ``admin`` migrations included), and
    the label also keeps permission codenames (``monitoring.operate_cluster``), content types
    and admin URLs of users, tenants and tokens unchanged. ``accounts/migrations`` therefore
    holds the whole history of the former ``monitoring`` app; migration ``0011`` hands the other
    models over to the domain apps without touching a table.
    """

    default_auto_field = "django.db.models.BigAutoField"
    name = "accounts"
    label = "monitoring"
    verbose_name = _("Accounts")

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from accounts.services.roles import roles_ensure_after_migrate

        # Every app's turn (idempotent): the groups' model permissions of apps migrated after
        # this one exist only once their own post_migrate created them.
        post_migrate.connect(roles_ensure_after_migrate, dispatch_uid="roles_ensure")
        # Registers the OpenAPI description of token authentication with drf-spectacular.
        import cluster_portal.web.schema  # noqa: F401
