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
        from django.contrib.auth.models import Group
        from django.db.models.signals import m2m_changed, post_migrate, post_save, pre_delete

        from accounts import receivers
        from accounts.models import IntegrationToken, User
        from accounts.services.roles import roles_ensure_after_migrate

        # Every app's turn (idempotent): the groups' model permissions of apps migrated after
        # this one exist only once their own post_migrate created them.
        post_migrate.connect(roles_ensure_after_migrate, dispatch_uid="roles_ensure")
        # A token dies with its owner's authority (accounts/services/authority.py).
        post_save.connect(receivers.user_saved, sender=User, dispatch_uid="tokens_user_saved")
        pre_delete.connect(
            receivers.user_deleting, sender=User, dispatch_uid="tokens_user_deleting"
        )
        # Deleting a token anywhere (admin, queryset, shell) leaves a row in its history.
        pre_delete.connect(
            receivers.token_deleting, sender=IntegrationToken, dispatch_uid="token_deleting"
        )
        for through in (User.groups.through, User.user_permissions.through):
            m2m_changed.connect(
                receivers.user_access_changed,
                sender=through,
                dispatch_uid=f"tokens_{through._meta.model_name}",
            )
        m2m_changed.connect(
            receivers.group_permissions_changed,
            sender=Group.permissions.through,
            dispatch_uid="tokens_group_permissions",
        )
        # Registers the OpenAPI description of token authentication with drf-spectacular.
        import cluster_portal.web.schema  # noqa: F401
