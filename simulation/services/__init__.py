"""Writes of the simulation app: creating and controlling twin runs, and ticking them."""

from simulation.services.runs import (
    SANDBOX_TENANT_SLUG,
    engine_catalogue_sync,
    sandbox_tenant,
    scenario_tenants,
    twin_run_control,
    twin_run_create,
    twin_run_new,
)
from simulation.services.ticks import TickOutcome, twin_pool_tick, twin_tick

__all__ = [
    "SANDBOX_TENANT_SLUG",
    "TickOutcome",
    "engine_catalogue_sync",
    "sandbox_tenant",
    "scenario_tenants",
    "twin_pool_tick",
    "twin_run_control",
    "twin_run_create",
    "twin_run_new",
    "twin_tick",
]
