"""Admin registrations for tenants, users and integration tokens."""

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.utils.translation import gettext_lazy as _

from accounts.models import IntegrationToken, Tenant, User
from accounts.services.tokens import token_revoke


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    list_display = ("username", "tenant", "is_staff", "is_superuser", "is_active")
    list_filter = ("tenant", "is_staff", "groups")
    fieldsets = (*DjangoUserAdmin.fieldsets, (_("Tenancy"), {"fields": ("tenant",)}))
    add_fieldsets = (*DjangoUserAdmin.add_fieldsets, (_("Tenancy"), {"fields": ("tenant",)}))


@admin.register(IntegrationToken)
class IntegrationTokenAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "prefix",
        "tenant",
        "scopes",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = ("tenant",)
    readonly_fields = ("prefix", "secret_hash", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke_tokens"]

    def has_add_permission(self, request) -> bool:
        # The plaintext can only be shown once, which the admin form cannot do safely:
        # tokens are issued with `manage.py create_integration_token`.
        return False

    @admin.action(description=_("Revoke selected tokens"))
    def revoke_tokens(self, request, queryset) -> None:
        count = 0
        for token in queryset.filter(revoked_at__isnull=True):
            token_revoke(token=token)
            count += 1
        self.message_user(
            request, _("%(count)d token(s) revoked.") % {"count": count}, messages.SUCCESS
        )
