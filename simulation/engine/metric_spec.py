"""One entry of the metric catalogue (its own module so every metric list can name it)."""

from __future__ import annotations

from typing import NamedTuple


class MetricSpec(NamedTuple):
    """One catalogue entry."""

    name: str
    unit: str
    entity_kind: str
    description: str
