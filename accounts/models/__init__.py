"""Accounts: tenants, users and integration tokens."""

from accounts.models.tenancy import Tenant, User
from accounts.models.tokens import IntegrationToken

__all__ = ["IntegrationToken", "Tenant", "User"]
