"""Figures the validation report takes from apps above dashboards (the twin's ablation).

Dashboards must not import the simulation app (the DAG); the twin registers a provider here
when it starts, and the report asks whatever is registered. Without a provider the report
says there is no ablation to show. The report asks for a run of its own unified cluster's
size and accelerator: an ablation of other hardware says nothing about these clusters.
"""

from __future__ import annotations

from collections.abc import Callable

AblationProvider = Callable[..., dict | None]
_providers: list[AblationProvider] = []


def ablation_provider_register(provider: AblationProvider) -> None:
    """Register ``provider(cards=, hardware=)``: the latest ablation on those cards (any,
    when ``None``) as a dict, or ``None``."""
    if provider not in _providers:
        _providers.append(provider)


def latest_ablation(*, cards: int | None = None, hardware: str | None = None) -> dict | None:
    """``{"run": id, "cards": n, "hardware": id, "hours": h, "seeds": [...], "rows": [...]}``
    of the newest ablation on ``cards`` × ``hardware``, or ``None``."""
    for provider in _providers:
        found = provider(cards=cards, hardware=hardware)
        if found:
            return found
    return None
