"""Keep the cyclic garbage collector off the long-lived start-up heap.

A web or worker process holds 100,000–135,000 objects after start-up and its first request
(Django, DRF, NumPy, URL resolvers, translation catalogues, the metric catalogue, modules
imported on first use) that live as long as the process. CPython's full collection walks all
of them: measured at 40–90 ms here, once every ~20 dashboard requests, which was most of
the gap between a page's median and its 95th percentile (BENCHMARKS.md). :func:`settle_heap`
moves what exists into the permanent generation (``gc.freeze``), so later collections walk
only what requests and tasks create. Nothing leaks: frozen objects are still freed by
reference counting; they are only no longer scanned for reference cycles.

:func:`release_free_memory` hands memory that Python and NumPy have freed back to the
operating system. A twin tick allocates and frees tens of MiB of arrays; glibc keeps freed
heap pages for reuse, so a Celery worker's resident set drifted up by 30–40 MiB an hour in the
soak although nothing was alive in it (measured in process: 214–227 MiB resident before a
trim, 178–182 MiB after, flat over 40 ticks; BENCHMARKS.md, "Soak").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging

from django.core.signals import request_finished

logger = logging.getLogger(__name__)


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


def _load_malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return None


_MALLOC_TRIM = _load_malloc_trim()


def release_free_memory() -> bool:
    """Return freed heap pages to the OS (glibc's ``malloc_trim(0)``); False where there is
    no such call. Cheap (a few ms on a ~200 MiB heap): call it after each background task."""
    if _MALLOC_TRIM is None:
        return False
    try:
        _MALLOC_TRIM(0)
    except OSError:  # pragma: no cover - a trim failing must never fail a task
        logger.debug("malloc_trim failed", exc_info=True)
        return False
    return True
