"""A small twin run shared by the simulation tests."""

from __future__ import annotations

import pytest

from inventory.models import Cluster
from simulation.engine import default_scenario
from simulation.services import twin_run_create


@pytest.fixture
def twin_run(db):
    cluster = Cluster.objects.create(name="twin-small", kind=Cluster.Kind.UNIFIED)
    return twin_run_create(
        name="small", cluster=cluster, scenario=default_scenario(cards=256, seed=3)
    )


def stored_values(cluster) -> int:
    """Raw values stored for ``cluster``: sample rows plus non-missing values in raw frames."""
    import numpy as np

    from telemetry.models import Frame, Sample
    from telemetry.store.frame_codec import frame_array

    frames = Frame.objects.filter(layout__cluster=cluster, resolution=0).values_list(
        "values", flat=True
    )
    dense = sum(int(np.count_nonzero(~np.isnan(frame_array(v, np.float32)))) for v in frames)
    return Sample.objects.filter(entity__cluster=cluster).count() + dense


def frame_values(cluster, resolution: int) -> int:
    """Values the cluster's frames hold at ``resolution``: non-missing raw values (0) or the
    rollups' per-entity counts, which must add up to the same number when nothing is lost or
    counted twice."""
    import numpy as np

    from telemetry.models import Frame
    from telemetry.store.frame_codec import frame_array

    frames = Frame.objects.filter(layout__cluster=cluster, resolution=resolution)
    if resolution == 0:
        arrays = frames.values_list("values", flat=True)
        return sum(int(np.count_nonzero(~np.isnan(frame_array(v, np.float32)))) for v in arrays)
    return sum(int(frame_array(c, np.int32).sum()) for c in frames.values_list("count", flat=True))


def telemetry(cluster) -> list[tuple]:
    """Everything stored for ``cluster``, comparable across clusters (keys, not ids)."""
    from telemetry.models import Frame, Sample

    rows = sorted(
        Sample.objects.filter(entity__cluster=cluster).values_list(
            "metric__name", "entity__kind", "entity__key", "ts", "value"
        )
    )
    frames = sorted(
        (
            f.metric.name,
            f.layout.kind,
            f.resolution,
            f.ts,
            bytes(f.values or b""),
            bytes(f.count or b""),
            bytes(f.sum or b""),
        )
        for f in Frame.objects.filter(layout__cluster=cluster).select_related("metric", "layout")
    )
    return rows + frames
