"""Decoding a Prometheus remote-write 1.0 request body into exporter samples.

The body is a snappy *block* (not framed) compressed protobuf ``WriteRequest``. Decompression
uses cramjam's snappy and decoding the generated classes in ``remote_pb2``; nothing here is a
hand-written decoder of either format. Each series becomes the same ``ParsedSample`` the text
exposition parser yields, so remote-write goes through the one mapping (DCGM and npu-exporter
label quirks, host/UUID/vdie_id, health) and the one store. Pure Python: no Django.
"""

from __future__ import annotations

from dataclasses import dataclass

import cramjam
from google.protobuf.message import DecodeError

from telemetry.ingestion.prometheus_parse import ParsedSample
from telemetry.remote_write import remote_pb2

__all__ = ["RemoteWriteError", "decode_write_request", "snappy_uncompressed_length"]

_TYPES = {
    remote_pb2.MetricMetadata.COUNTER: "counter",
    remote_pb2.MetricMetadata.GAUGE: "gauge",
    remote_pb2.MetricMetadata.HISTOGRAM: "histogram",
    remote_pb2.MetricMetadata.SUMMARY: "summary",
}


@dataclass
class RemoteWriteError(ValueError):
    """The body is not a remote-write request the portal accepts (a 4xx: do not retry)."""

    message: str
    field: str = "body"
    status: int = 400

    def __str__(self) -> str:
        return self.message


def snappy_uncompressed_length(body: bytes) -> int:
    """The uncompressed length a snappy block declares in its varint preamble.

    Read before decompressing so a small body that claims gigabytes is refused without
    allocating them.
    """
    length, shift = 0, 0
    for position, byte in enumerate(body[:10]):
        length |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return length
        shift += 7
        if position == 4 and length > 0xFFFFFFFF:
            break
    raise RemoteWriteError("body is not snappy-compressed (bad length preamble)")


def decode_write_request(body: bytes, *, max_uncompressed_bytes: int) -> list[ParsedSample]:
    """Every sample of every series in ``body``, in order; ``line`` is the 1-based series."""
    if not body:
        raise RemoteWriteError("empty body: expected a snappy-compressed WriteRequest")
    declared = snappy_uncompressed_length(body)
    if declared > max_uncompressed_bytes:
        raise RemoteWriteError(
            f"body decompresses to {declared:,} bytes, over the limit of "
            f"{max_uncompressed_bytes:,}",
            status=413,
        )
    try:
        raw = bytes(cramjam.snappy.decompress_raw(body))
    except cramjam.DecompressionError as exc:
        raise RemoteWriteError(f"body is not valid snappy: {exc}") from None
    request = remote_pb2.WriteRequest()
    try:
        request.ParseFromString(raw)
    except DecodeError as exc:
        raise RemoteWriteError(f"body is not a remote-write WriteRequest: {exc}") from None
    types = {m.metric_family_name: _TYPES.get(m.type) for m in request.metadata}
    samples: list[ParsedSample] = []
    for index, series in enumerate(request.timeseries, start=1):
        labels = {label.name: label.value for label in series.labels}
        name = labels.pop("__name__", "")
        if not name:
            raise RemoteWriteError(f"series {index}: no __name__ label", field="labels")
        for point in series.samples:
            samples.append(
                ParsedSample(
                    name=name,
                    labels=labels,
                    value=point.value,
                    timestamp_ms=point.timestamp,
                    line=index,
                    family_type=types.get(name),
                )
            )
    return samples
