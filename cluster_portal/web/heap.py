"""Keep the cyclic garbage collector off the long-lived start-up heap.

A web or worker process holds 100,000–135,000 objects after start-up and its first request
(Django, DRF, NumPy, URL resolvers, translation catalogues, the metric catalogue, modules
imported on first use) that live as long as the process. CPython's full collection walks all
of them: measured at 40–90 ms here, once every ~20 dashboard requests, which was most of
the gap between a page's median and its 95th percentile (BENCHMARKS.md). :func:`settle_heap`
moves what exists into the permanent generation (``gc.freeze``), so later collections walk
only what requests and tasks create. Nothing leaks: frozen objects are still freed by
reference counting; they are only no longer scanned for reference cycles.
"""

from __future__ import annotations

import gc

from django.core.signals import request_finished


def settle_heap() -> None:
    """Collect once, then freeze everything alive (call at the end of process start-up)."""
    gc.collect()
    gc.freeze()


def _settle_once(**_: object) -> None:
    request_finished.disconnect(_settle_once)
    settle_heap()


def settle_after_first_request() -> None:
    """:func:`settle_heap` again once the first request has finished: modules and catalogues
    loaded on first use (DRF's renderers, the schema, translations) are start-up heap too."""
    request_finished.connect(_settle_once)
