"""Tenants and users: customers belong to exactly one tenant, staff to none."""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class Tenant(models.Model):
    """A customer organisation. Everything a customer owns hangs off one tenant.

    The role permissions live on this model's Meta because they are about whose data a user
    may see and act on.
    """

    slug = models.SlugField(_("slug"), max_length=50, unique=True, validators=[validate_slug])
    name = models.CharField(_("name"), max_length=200, unique=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        verbose_name = _("tenant")
        verbose_name_plural = _("tenants")
        permissions = [
            ("view_all_tenants", _("Can see every tenant's data (staff pages)")),
            ("operate_cluster", _("Can operate the cluster, the twin and gates")),
            ("approve_migrations", _("Can approve or reject migration gates")),
            (
                "force_promote_migrations",
                _("Break-glass: can vote to force a migration gate without analysis"),
            ),
        ]

    def __str__(self) -> str:
        return self.name


class User(AbstractUser):
    """A portal login. Customers carry a tenant; staff (operators, approvers) carry none."""

    tenant = models.ForeignKey(
        Tenant,
        verbose_name=_("tenant"),
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="users",
        help_text=_("Customers belong to one tenant; staff users belong to none."),
    )

    class Meta(AbstractUser.Meta):
        swappable = "AUTH_USER_MODEL"
        constraints = [
            models.CheckConstraint(
                condition=Q(tenant__isnull=True) | Q(is_staff=False),
                name="user_staff_has_no_tenant",
                violation_error_message=_("Staff users cannot belong to a tenant."),
            )
        ]

    def clean(self) -> None:
        super().clean()
        if self.is_staff and self.tenant_id is not None:
            raise ValidationError({"tenant": _("Staff users cannot belong to a tenant.")})

    @property
    def is_customer(self) -> bool:
        return self.tenant_id is not None and not self.is_superuser

    @property
    def sees_all_tenants(self) -> bool:
        return self.is_superuser or (
            self.tenant_id is None and self.has_perm("monitoring.view_all_tenants")
        )
