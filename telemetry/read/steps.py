"""Plotting steps shared by both read backends (pure arithmetic, no store)."""

from __future__ import annotations

HOUR_SECONDS = 3600


def hour_dividing_step(step: int, resolution: int) -> int:
    """The smallest step of at least ``step`` that is whole ``resolution`` buckets and divides
    the hour (at most the hour itself): buckets keyed ``ts // step * step`` then never
    straddle an hour's edge, which per-hour figures (the ledger's hours) need."""
    unit = max(resolution, 1)
    for candidate in range(unit, HOUR_SECONDS + 1, unit):
        if candidate >= step and HOUR_SECONDS % candidate == 0:
            return candidate
    return HOUR_SECONDS
