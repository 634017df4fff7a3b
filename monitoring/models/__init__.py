"""Monitoring models, one module per concern."""

from monitoring.models.heartbeats import Heartbeat
from monitoring.models.tenancy import Tenant, User
from monitoring.models.tokens import IntegrationToken

__all__ = ["Heartbeat", "IntegrationToken", "Tenant", "User"]
