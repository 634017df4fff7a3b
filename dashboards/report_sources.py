"""Figures the validation report takes from apps above dashboards (the twin's ablation).

Dashboards must not import the simulation app (the DAG); the twin registers a provider here
when it starts, and the report asks whatever is registered. Without a provider the report
says there is no ablation to show.
"""

from __future__ import annotations

from collections.abc import Callable

AblationProvider = Callable[[], dict | None]
_providers: list[AblationProvider] = []


def ablation_provider_register(provider: AblationProvider) -> None:
    """Register ``provider()``: the latest ablation as a dict, or ``None``."""
    if provider not in _providers:
        _providers.append(provider)


def latest_ablation() -> dict | None:
    """``{"run": id, "cards": n, "hardware": id, "hours": h, "rows": [...]}`` or ``None``."""
    for provider in _providers:
        found = provider()
        if found:
            return found
    return None
