"""The one base mixin for API views over tenant-owned rows.

``get_queryset`` passes ``base_queryset()`` through :func:`scope_to_tenant` with the view's
``tenant_field``, so lists never include another tenant's rows and another tenant's object is
a 404 (it is simply not in the queryset). Staff-only views over shared infrastructure use
:class:`StaffOnlyMixin` instead.
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, IsAuthenticated
from rest_framework.request import Request

from accounts.api.authentication import IntegrationPrincipal
from accounts.api.permissions import HasRequiredScope
from accounts.selectors.scoping import principal_sees_all, scope_to_tenant


class TenantScopedMixin:
    """Scope ``base_queryset()`` to the requester's tenant (staff see every tenant)."""

    tenant_field: str = "tenant"

    def base_queryset(self) -> QuerySet:
        raise NotImplementedError

    def get_queryset(self) -> QuerySet:
        return scope_to_tenant(self.base_queryset(), self.request.user, self.tenant_field)


class StaffOnlyMixin:
    """Cluster infrastructure (inventory, exporters, twin): staff and operator-level tokens."""

    staff_only_message = _("This is visible to cluster staff only.")

    def initial(self, request: Request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        if not principal_sees_all(request.user):
            raise PermissionDenied(self.staff_only_message)


class OperatorSourceMixin(StaffOnlyMixin):
    """Where a cluster's data comes from (PromQL data sources, scheduler sources): staff only.

    A token reads these with the ``read`` scope (a dashboard or a provisioning script needs to
    know where figures come from); changing them, and any use by a signed-in person, needs
    ``ingest``: the role that may change what the portal stores.
    """

    permission_classes = [IsAuthenticated, HasRequiredScope]

    @property
    def required_scope(self) -> str:
        token = isinstance(self.request.user, IntegrationPrincipal)
        return "read" if token and self.request.method in SAFE_METHODS else "ingest"
