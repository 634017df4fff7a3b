"""Start-up heap freezing: later full collections skip what was alive at start-up."""

from __future__ import annotations

import gc

import pytest
from django.core.signals import request_finished

from cluster_portal.web import heap


def test_settling_moves_every_live_object_into_the_permanent_generation():
    gc.unfreeze()
    try:
        alive = [[] for _ in range(1000)]  # lists are tracked by the collector
        heap.settle_heap()
        assert gc.get_freeze_count() >= len(alive)
        alive[0].append("still usable")
    finally:
        gc.unfreeze()


@pytest.mark.django_db  # request_finished also closes old database connections
def test_the_heap_is_settled_again_once_after_the_first_request(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "settle_heap", lambda: calls.append(1))
    heap.settle_after_first_request()
    request_finished.send(sender=None)
    request_finished.send(sender=None)
    assert calls == [1]


def test_freed_memory_is_handed_back_where_the_c_library_can(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "_MALLOC_TRIM", lambda pad: calls.append(pad))
    assert heap.release_free_memory() is True
    assert calls == [0]
    monkeypatch.setattr(heap, "_MALLOC_TRIM", None)
    assert heap.release_free_memory() is False


@pytest.mark.django_db
def test_every_celery_task_ends_by_releasing_free_memory(monkeypatch):
    from celery.signals import task_postrun

    calls = []
    monkeypatch.setattr(heap, "release_free_memory", lambda: calls.append(1) or True)
    task_postrun.send(sender=None)
    assert calls == [1]
