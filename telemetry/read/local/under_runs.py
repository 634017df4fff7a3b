"""What a read of runs under a threshold answers (:mod:`telemetry.read.local.runs` and its
15-minute fast path :mod:`telemetry.read.local.runs_coarse` both build these)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class UnderRun:
    """One run of under-threshold readings; ``current``: it reaches the span's newest point."""

    start: datetime
    end: datetime
    current: bool


@dataclass(frozen=True)
class SpanRuns:
    """What one span's read found: whether it has any reading, and its runs, oldest first."""

    measured: bool
    runs: list[UnderRun] = field(default_factory=list)
