"""Writes of the simulation app: creating and controlling twin runs, and ticking them."""

from simulation.services.fanout import tick_commit_staged, tick_stage_part
from simulation.services.runs import (
    engine_catalogue_sync,
    twin_run_control,
    twin_run_create,
)
from simulation.services.ticks import TickOutcome, twin_pool_tick, twin_tick

__all__ = [
    "TickOutcome",
    "engine_catalogue_sync",
    "tick_commit_staged",
    "tick_stage_part",
    "twin_pool_tick",
    "twin_run_control",
    "twin_run_create",
    "twin_tick",
]
