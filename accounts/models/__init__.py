"""Accounts: tenants, users, integration tokens and the tokens' history."""

from accounts.models.tenancy import Tenant, User
from accounts.models.token_events import TokenEvent
from accounts.models.tokens import IntegrationToken

__all__ = ["IntegrationToken", "Tenant", "TokenEvent", "User"]
