"""Building remote-write bodies the way Prometheus does (generated classes + snappy block)."""

from __future__ import annotations

import cramjam

from telemetry.receivers.remote_write import remote_pb2


def write_request(series: list[tuple[dict[str, str], list[tuple[int, float]]]]) -> bytes:
    """``series`` is ``[(labels incl. __name__, [(timestamp_ms, value), ...]), ...]``."""
    request = remote_pb2.WriteRequest()
    for labels, points in series:
        ts = request.timeseries.add()
        for name in sorted(labels):
            label = ts.labels.add()
            label.name, label.value = name, labels[name]
        for timestamp, value in points:
            sample = ts.samples.add()
            sample.timestamp, sample.value = timestamp, value
    return bytes(cramjam.snappy.compress_raw(request.SerializeToString()))
