"""What keeps a slow PromQL data source from holding the web tier.

Every read has one wall-clock deadline (``cluster_portal.web.outbound``). In a web request
three more rules apply, set up by ``telemetry.read.promql.middleware``:

* **a budget per request** (``PROMQL_WEB_BUDGET_SECONDS``): all reads of one page or API call
  share it, so a page of ten reads against a slow source still answers (503) well before
  gunicorn's 30 s worker timeout kills the worker;
* **at most ``PROMQL_MAX_INFLIGHT_PER_SOURCE`` reads waiting on one source per process**; a read
  beyond that answers 503 at once, so a slow source can never occupy every thread and
  ``/healthz`` (and every page not reading that source) keeps being served;
* **a back-off** (``PROMQL_BACKOFF_SECONDS``) after a source timed out or refused the
  connection: its reads answer 503 at once instead of waiting out the deadline again.

Celery tasks (gates, alert rules) have no budget and no back-off: each measurement asks the
source (within its own deadline) and an unavailable one is measured Inconclusive.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings

from cluster_portal.web.outbound import Deadline

_budget: ContextVar[Deadline | None] = ContextVar("promql_budget", default=None)


class SourceBusy(Exception):
    """No read may start now (budget spent, too many in flight, or backing off)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _SourceState:
    def __init__(self, slots: int) -> None:
        self.slots = threading.BoundedSemaphore(slots)
        self.down_until = 0.0


_states: dict[str, _SourceState] = {}
_states_lock = threading.Lock()


def _state(base: str) -> _SourceState:
    with _states_lock:
        state = _states.get(base)
        if state is None:
            state = _states[base] = _SourceState(max(1, settings.PROMQL_MAX_INFLIGHT_PER_SOURCE))
        return state


def states_clear() -> None:
    """Forget every source's back-off (tests; a data source saved again)."""
    with _states_lock:
        _states.clear()


@contextmanager
def web_request_budget(seconds: float | None = None) -> Iterator[None]:
    """Within this block (one web request) PromQL reads share one budget and are guarded."""
    token = _budget.set(
        Deadline(settings.PROMQL_WEB_BUDGET_SECONDS if seconds is None else seconds)
    )
    try:
        yield
    finally:
        _budget.reset(token)


@contextmanager
def read_slot(base: str, timeout: float) -> Iterator[float]:
    """Seconds this read may take; raises :class:`SourceBusy` when it may not start."""
    budget = _budget.get()
    if budget is None:  # a Celery task or a command: only the read's own deadline
        yield timeout
        return
    state = _state(base)
    wait = state.down_until - time.monotonic()
    if wait > 0:
        raise SourceBusy(f"it failed moments ago; trying again in {wait:.0f} s")
    left = budget.at - time.monotonic()
    if left <= 0.05:
        raise SourceBusy("this request's time for data-source reads is spent")
    if not state.slots.acquire(blocking=False):
        raise SourceBusy("too many requests are already waiting on it")
    try:
        yield min(timeout, left)
    finally:
        state.slots.release()


def note_failure(base: str) -> None:
    """The source timed out or could not be reached: back off from it in the web tier."""
    if _budget.get() is None:
        return
    _state(base).down_until = time.monotonic() + settings.PROMQL_BACKOFF_SECONDS
