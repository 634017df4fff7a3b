"""Minute rollups held by their writer: merged from memory only while the row is unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import transaction

from telemetry.models import Entity, Frame, MetricDefinition
from telemetry.receivers.twin import layout_for_keys
from telemetry.store import frame_memo
from telemetry.store.frame_codec import frame_array
from telemetry.store.frames import COUNT_DTYPE, SUM_DTYPE, VALUE_DTYPE, frames_write

KEYS = [f"c{i}" for i in range(6)]
T0 = 1_780_000_020  # inside one minute bucket

pytestmark = pytest.mark.postgresql_only("the memo is PostgreSQL's (the ORM path elsewhere)")


@pytest.fixture
def layout(cluster):
    for key in KEYS:
        Entity.objects.create(cluster=cluster, kind="accelerator", key=key)
    frame_memo.rollups_forget()
    yield layout_for_keys(cluster, "accelerator", KEYS)
    frame_memo.rollups_forget()


@pytest.fixture
def util():
    return MetricDefinition.objects.get(name="accelerator_utilization_ratio")


def write(layout, metric, values, ts, capture):
    with capture(execute=True), transaction.atomic():
        frames_write(layout=layout, values={metric.id: np.asarray(values, float)}, ts=ts)


def minute(layout, metric):
    frame = Frame.objects.get(metric=metric, layout=layout, resolution=60)
    return (
        frame_array(frame.count, COUNT_DTYPE),
        frame_array(frame.sum, SUM_DTYPE),
        frame_array(frame.max, VALUE_DTYPE),
    )


@pytest.mark.django_db
def test_committed_minute_rollups_are_merged_from_memory_and_stay_exact(
    layout, util, django_capture_on_commit_callbacks
):
    steps = [np.linspace(0, 1, 6) * k for k in (1, 2, 3)]
    for i, values in enumerate(steps):
        write(layout, util, values, T0 + 10 * i, django_capture_on_commit_callbacks)
    assert frame_memo._HELD, "the writer holds the minute it committed"
    count, total, high = minute(layout, util)
    assert count.tolist() == [3] * 6
    assert np.allclose(total, np.sum(steps, axis=0))
    assert np.allclose(high, np.max(steps, axis=0))


@pytest.mark.django_db
def test_a_rollup_changed_by_another_writer_is_read_back_not_taken_from_memory(
    layout, util, django_capture_on_commit_callbacks
):
    write(layout, util, np.ones(6), T0, django_capture_on_commit_callbacks)
    write(layout, util, np.ones(6), T0 + 10, django_capture_on_commit_callbacks)
    # Another process folds a frame into the same minute: new arrays, new row version.
    frame = Frame.objects.get(metric=util, layout=layout, resolution=60)
    frame.count = np.full(6, 5, COUNT_DTYPE).tobytes()
    frame.sum = np.full(6, 5.0, SUM_DTYPE).tobytes()
    frame.save(update_fields=["count", "sum"])
    write(layout, util, np.ones(6), T0 + 20, django_capture_on_commit_callbacks)
    count, total, _ = minute(layout, util)
    assert count.tolist() == [6] * 6
    assert total.tolist() == [6.0] * 6


@pytest.mark.django_db
def test_a_merge_rolled_back_is_not_remembered(layout, util, django_capture_on_commit_callbacks):
    write(layout, util, np.ones(6), T0, django_capture_on_commit_callbacks)
    write(layout, util, np.ones(6), T0 + 10, django_capture_on_commit_callbacks)
    held = dict(frame_memo._HELD)
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            frames_write(layout=layout, values={util.id: np.full(6, 9.0)}, ts=T0 + 20)
            raise RuntimeError("tick fails before its commit")
    assert frame_memo._HELD == held
    write(layout, util, np.ones(6), T0 + 30, django_capture_on_commit_callbacks)
    count, total, high = minute(layout, util)
    assert count.tolist() == [3] * 6
    assert high.tolist() == [1.0] * 6


@pytest.mark.django_db
def test_a_committed_layout_is_found_without_a_query_and_a_deleted_one_is_let_go(
    layout, util, cluster, django_capture_on_commit_callbacks, django_assert_num_queries
):
    from telemetry.models import FrameLayout

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        held = layout_for_keys(cluster, "accelerator", KEYS)
    with django_assert_num_queries(0):
        assert layout_for_keys(cluster, "accelerator", KEYS).pk == held.pk
    FrameLayout.objects.filter(pk=held.pk).delete()
    with pytest.raises(FrameLayout.DoesNotExist), transaction.atomic():
        frames_write(layout=held, values={util.id: np.ones(6)}, ts=T0)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        again = layout_for_keys(cluster, "accelerator", KEYS)  # registered anew
    assert again.pk != held.pk
    write(
        layout=again,
        metric=util,
        values=np.ones(6),
        ts=T0,
        capture=django_capture_on_commit_callbacks,
    )
    assert Frame.objects.filter(layout=again, resolution=60).count() == 1
