"""Remote-write bodies built on the wire format directly, fast enough for millions of samples
(the generated classes would take seconds and hundreds of MiB just to build a bomb)."""

from __future__ import annotations

import struct

import cramjam


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return varint((number << 3) | 2) + varint(len(payload)) + payload


def label(name: str, value: str) -> bytes:
    return _field(1, _field(1, name.encode()) + _field(2, value.encode()))


def sample(timestamp_ms: int, value: float) -> bytes:
    return _field(2, b"\x09" + struct.pack("<d", value) + b"\x10" + varint(timestamp_ms))


def series(labels: dict[str, str], samples: bytes) -> bytes:
    """One ``TimeSeries`` (``samples``: concatenated :func:`sample` fields)."""
    return _field(1, b"".join(label(k, v) for k, v in sorted(labels.items())) + samples)


def bomb(*, samples_total: int, per_series: int, timestamp_ms: int) -> tuple[bytes, int]:
    """``(snappy body, protobuf size)``: ``samples_total`` samples of a dcgm gauge."""
    points = sample(timestamp_ms, 1.0) * per_series
    one = series(
        {"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "GPU-a", "gpu": "0", "Hostname": "h"},
        points,
    )
    raw = one * (samples_total // per_series)
    return bytes(cramjam.snappy.compress_raw(raw)), len(raw)
