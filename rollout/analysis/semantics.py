"""Argo Rollouts analysis semantics as pure functions over counters (no Django, no I/O).

Per metric (one gate criterion):

- each measurement is ``successful``, ``failed``, ``inconclusive`` or ``error``;
- ``successful``/``failed``/``inconclusive`` use up one of ``count``; an ``error`` does not —
  it is retried after a short delay and only counts towards ``consecutive_errors``, which any
  other outcome resets;
- the metric ends ``error`` when consecutive errors exceed ``consecutive_error_limit``,
  ``inconclusive`` when inconclusive measurements exceed ``inconclusive_limit``, ``failed``
  when failed ones exceed ``failure_limit``, and ``successful`` once ``count`` measurements
  were taken without tripping a limit **and at least one of them was Successful**. When several
  limits trip at once, Error beats Inconclusive beats Failed.
- **No pass on nothing**: a metric whose ``count`` is used up without a single Successful
  measurement ends ``failed`` if any was Failed, else ``inconclusive`` — whatever its limits
  (``count: 1`` with an Inconclusive measurement under an inconclusive limit of 1 is not a
  pass: nothing was measured to hold).

Per run: the run takes its worst decisive (not dry-run) metric with the same precedence;
as soon as one decisive metric ends unsuccessfully the run ends and the other metrics stop
early. The run is successful when every decisive metric is; dry-run metrics are measured and
shown but never change the outcome. A run without a decisive metric is never successful
(inconclusive once its dry-run metrics are done): only an explicit manual gate passes without
measurements, and that is decided before any run is measured.
"""

from __future__ import annotations

from dataclasses import dataclass

RUNNING = "running"
SUCCESSFUL = "successful"
FAILED = "failed"
INCONCLUSIVE = "inconclusive"
ERROR = "error"

# Most severe first: the order limits and metrics are resolved in.
PRECEDENCE: tuple[str, ...] = (ERROR, INCONCLUSIVE, FAILED)


@dataclass
class MetricCounters:
    """A metric's limits and counters (mirrors ``MetricResult``)."""

    count: int
    failure_limit: int = 0
    inconclusive_limit: int = 0
    consecutive_error_limit: int = 4
    taken: int = 0
    successful: int = 0
    failed: int = 0
    inconclusive: int = 0
    errors: int = 0
    consecutive_errors: int = 0


def metric_record(counters: MetricCounters, outcome: str) -> str:
    """Add one measurement's ``outcome`` to ``counters``; return the metric's new phase."""
    if outcome == ERROR:
        counters.errors += 1
        counters.consecutive_errors += 1
    elif outcome in (SUCCESSFUL, FAILED, INCONCLUSIVE):
        counters.consecutive_errors = 0
        counters.taken += 1
        setattr(counters, outcome, getattr(counters, outcome) + 1)
    else:
        raise ValueError(f"outcome: not a measurement outcome ({outcome!r})")
    return metric_phase(counters)


def metric_phase(c: MetricCounters) -> str:
    """The metric's phase from its counters (limits first, in precedence order)."""
    tripped = {
        ERROR: c.consecutive_errors > c.consecutive_error_limit,
        INCONCLUSIVE: c.inconclusive > c.inconclusive_limit,
        FAILED: c.failed > c.failure_limit,
    }
    for phase in PRECEDENCE:
        if tripped[phase]:
            return phase
    if c.taken < c.count:
        return RUNNING
    if c.successful == 0:  # count used up without one measurement that held
        return FAILED if c.failed else INCONCLUSIVE
    return SUCCESSFUL


def run_phase(metrics: list[tuple[str, bool]]) -> str:
    """The run's phase from ``(metric phase, dry_run)`` pairs."""
    decisive = [phase for phase, dry_run in metrics if not dry_run]
    for phase in PRECEDENCE:
        if phase in decisive:
            return phase
    if not decisive:
        # Nothing decisive measured is nothing proven: never a pass.
        done = all(phase != RUNNING for phase, _dry in metrics)
        return INCONCLUSIVE if done else RUNNING
    if all(phase != RUNNING for phase in decisive):
        return SUCCESSFUL
    return RUNNING


def compare(value: float, comparator: str, threshold: float) -> bool:
    """``value comparator threshold`` for the stored comparator codes."""
    if comparator == "lt":
        return value < threshold
    if comparator == "le":
        return value <= threshold
    if comparator == "gt":
        return value > threshold
    if comparator == "ge":
        return value >= threshold
    raise ValueError(f"comparator: unknown ({comparator!r})")
