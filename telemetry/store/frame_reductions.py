"""Filling in the stored fleet reduction of frames written before it was kept."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from django.db import transaction

from telemetry.models import Frame
from telemetry.store.frame_codec import frame_array
from telemetry.store.frames import COUNT_DTYPE, SUM_DTYPE, VALUE_DTYPE, entity_means_sum


def frames_backfill_reductions(*, batch: int = 200, progress: Callable[[str], None] | None = None):
    """Compute ``entities_sum``/``entities_count`` for frames that have none; returns how many."""
    done = 0
    while True:
        with transaction.atomic():
            frames = list(
                Frame.objects.select_for_update(skip_locked=True)
                .filter(entities_count__isnull=True)
                .order_by("pk")[:batch]
            )
            if not frames:
                return done
            for frame in frames:
                if frame.resolution == 0:
                    values = frame_array(frame.values, VALUE_DTYPE)
                    present = ~np.isnan(values)
                    frame.entities_sum = float(values[present].sum(dtype=np.float64))
                    frame.entities_count = int(present.sum())
                else:
                    frame.entities_sum, frame.entities_count = entity_means_sum(
                        frame_array(frame.count, COUNT_DTYPE),
                        frame_array(frame.sum, SUM_DTYPE),
                    )
            Frame.objects.bulk_update(frames, ["entities_sum", "entities_count"])
        done += len(frames)
        if progress:
            progress(f"{done} frames …")
