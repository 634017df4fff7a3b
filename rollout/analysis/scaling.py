"""What a workload's figure should become on the target's accelerator: the twin's model.

A relative criterion never compares raw figures across hardware (one H100's samples/s is not
an Ascend card's): the source's figure is scaled by the twin's model of **both** accelerators
for that workload — the same job (model shape, sequence length, batch, cards, the layout a
scheduler would pick) or the same service (model, tensor parallelism, prompt and output
lengths) — and the target is judged against that expectation ("15.41 on H100 → expected 8.2
on 910B; measured 7.9").

Rollout must not import the simulation app (tests/test_architecture.py: ``simulation`` sits
on top of the DAG, and its engine is reached through it), so the twin registers a provider
here when it starts (``simulation.apps``), as it does for the report's ablation
(``dashboards.report_sources``). The same accelerator on both sides needs no model (factor 1).
Without a provider, or for a pair, metric or workload the twin does not model, there is no
expectation and the criterion gives no verdict (Inconclusive, saying so).

Pure Python: no Django, no I/O here; the provider reads what it needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Scaling:
    """Expected target figure = source figure × ``factor``; ``note`` says how it was modelled
    (shown to approvers), ``source``/``target`` name the two accelerators."""

    factor: float
    note: str
    source: str
    target: str


@dataclass(frozen=True)
class ScalingQuestion:
    """What a provider is asked: one metric of one workload moved between two accelerators.

    ``workload`` is the source workload's name on the source cluster (its twin job or
    service), ``target_workload`` its counterpart's on the target; ``workload_kind``
    ``training``/``inference``; hardware by catalogue id (``*_name`` as shown); the windows
    are the baseline's and the measurement's, for what the workload held in them.
    """

    metric: str
    workload_kind: str | None
    workload: str | None
    target_workload: str | None
    source_cluster_id: int
    target_cluster_id: int
    source_hardware: str | None
    target_hardware: str | None
    source_name: str = ""
    target_name: str = ""
    source_window: tuple[datetime, datetime] | None = None
    target_window: tuple[datetime, datetime] | None = None


ScalingProvider = Callable[[ScalingQuestion], Scaling | None]
_providers: list[ScalingProvider] = []


def scaling_provider_register(provider: ScalingProvider) -> None:
    """Register ``provider(question) -> Scaling | None`` (None: not modelled)."""
    if provider not in _providers:
        _providers.append(provider)


def scaling_for(question: ScalingQuestion) -> Scaling | None:
    """The expectation's factor, or ``None`` when nothing models this pair for this figure."""
    if question.source_hardware is None or question.target_hardware is None:
        return None  # a cluster without a recorded accelerator: nothing to scale by
    if question.source_hardware == question.target_hardware:
        name = question.target_name or question.target_hardware
        return Scaling(1.0, f"same accelerator ({name}) on both sides", name, name)
    for provider in _providers:
        found = provider(question)
        if found is not None and found.factor > 0:
            return found
    return None
