"""Admin registrations for tenants, users, integration tokens and the tokens' history."""

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.utils.translation import gettext_lazy as _

from accounts.models import IntegrationToken, Tenant, TokenEvent, User
from accounts.services.tokens import token_revoke


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    """Deactivating a user, removing a group or moving them to another tenant revokes the
    tokens they can no longer back (``accounts.receivers``); the admin names who did it."""

    list_display = ("username", "tenant", "is_staff", "is_superuser", "is_active")
    list_filter = ("tenant", "is_staff", "groups")
    fieldsets = (*DjangoUserAdmin.fieldsets, (_("Tenancy"), {"fields": ("tenant",)}))
    add_fieldsets = (*DjangoUserAdmin.add_fieldsets, (_("Tenancy"), {"fields": ("tenant",)}))

    def save_model(self, request, obj, form, change) -> None:
        # Read by the receivers of this save and of the groups saved after it (same object).
        obj._authority_changed_by = request.user
        super().save_model(request, obj, form, change)

    def delete_model(self, request, obj) -> None:
        obj._authority_changed_by = request.user
        super().delete_model(request, obj)


@admin.register(IntegrationToken)
class IntegrationTokenAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "prefix",
        "tenant",
        "owner",
        "scopes",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = ("tenant",)
    fields = ("name", "prefix", "tenant", "owner", "scopes", "expires_at", "created_at")
    readonly_fields = (
        "name",
        "prefix",
        "tenant",
        "owner",
        "scopes",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    actions = ["revoke_tokens"]

    def has_add_permission(self, request) -> bool:
        # The plaintext can only be shown once, which the admin form cannot do safely:
        # tokens are issued with `manage.py create_integration_token` or over the API.
        return False

    def delete_model(self, request, obj) -> None:
        obj._deleted_by = request.user  # named in the token's history (accounts.receivers)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset) -> None:
        # One by one, so each deletion's history row names who deleted it.
        for token in queryset:
            self.delete_model(request, token)

    @admin.action(description=_("Revoke selected tokens"))
    def revoke_tokens(self, request, queryset) -> None:
        count = 0
        for token in queryset.filter(revoked_at__isnull=True):
            token_revoke(token=token, actor=request.user)
            count += 1
        self.message_user(
            request, _("%(count)d token(s) revoked.") % {"count": count}, messages.SUCCESS
        )


@admin.register(TokenEvent)
class TokenEventAdmin(admin.ModelAdmin):
    """The tokens' history, read-only: who issued, rotated or revoked which token, and why."""

    list_display = ("at", "token_label", "action", "cause", "owner_username", "actor_username")
    list_filter = ("action", "cause")
    search_fields = ("token_label", "owner_username", "actor_username")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
