"""Decoding a Prometheus remote-write 1.0 request body into exporter samples, within bounds.

The body is a snappy *block* (not framed) compressed protobuf ``WriteRequest``. Nothing is
decompressed or built before it is known to fit:

1. the snappy block's declared uncompressed length (its varint preamble) is read first and
   must be within ``max_uncompressed_bytes`` — a 2 MB body claiming 45 MB is refused without
   allocating anything;
2. the decompressed protobuf's series and samples are **counted on the wire**
   (:func:`write_request_counts`, a scan of field tags and lengths that allocates nothing per
   sample) and must be within ``max_series`` / ``max_samples``;
3. only then do the generated classes in ``remote_pb2`` parse it.

Per-series problems (too many labels, a label too long or holding a control character) drop
that series and are counted per reason; they do not refuse the batch, which Prometheus would
then drop for good. Each kept series becomes the same ``ParsedSample`` the text exposition
parser yields, so remote-write goes through the one mapping and the one store. Pure Python: no
Django.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cramjam
from google.protobuf.message import DecodeError

from telemetry.families.parse import ParsedSample, control_character_in
from telemetry.receivers.remote_write import remote_pb2

__all__ = [
    "DecodeLimits",
    "Decoded",
    "RemoteWriteError",
    "decode_write_request",
    "snappy_uncompressed_length",
    "write_request_counts",
]

_TYPES = {
    remote_pb2.MetricMetadata.COUNTER: "counter",
    remote_pb2.MetricMetadata.GAUGE: "gauge",
    remote_pb2.MetricMetadata.HISTOGRAM: "histogram",
    remote_pb2.MetricMetadata.SUMMARY: "summary",
}
# Wire tags: WriteRequest.timeseries = field 1, TimeSeries.samples = field 2 (length-delimited).
_TIMESERIES = 1
_SAMPLE_TAG = (2 << 3) | 2
# Every sample's tag is this one byte on the wire, and every series' (and label's) tag that
# one, so counting the bytes (C speed) bounds the counts from above: a body whose bounds are
# under the caps needs no exact scan.
_SAMPLE_TAG_BYTE = bytes([_SAMPLE_TAG])
_SERIES_TAG_BYTE = bytes([(_TIMESERIES << 3) | 2])


@dataclass
class RemoteWriteError(ValueError):
    """The body is not a remote-write request the portal accepts (a 4xx: do not retry)."""

    message: str
    field: str = "body"
    status: int = 400

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class DecodeLimits:
    """The bounds of one request (the service fills them from settings)."""

    max_uncompressed_bytes: int
    max_series: int
    max_samples: int
    max_labels: int
    max_label_value_chars: int


@dataclass
class Decoded:
    """The kept samples, the series count, and the series dropped per reason."""

    samples: list[ParsedSample]
    series: int
    dropped_series: dict[str, int] = field(default_factory=dict)
    dropped_samples: dict[str, int] = field(default_factory=dict)


def snappy_uncompressed_length(body: bytes) -> int:
    """The uncompressed length a snappy block declares in its varint preamble (cramjam's own
    reader of it).

    Read before decompressing so a small body that claims gigabytes is refused without
    allocating them.
    """
    if not body:
        raise RemoteWriteError("body is not snappy-compressed (empty)")
    try:
        return cramjam.snappy.decompress_raw_len(body)
    except cramjam.DecompressionError:
        raise RemoteWriteError("body is not snappy-compressed (bad length preamble)") from None


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise RemoteWriteError("body is not a remote-write WriteRequest: truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise RemoteWriteError("body is not a remote-write WriteRequest: varint too long")


def _skip(buf: bytes, pos: int, wire: int) -> int:
    if wire == 0:
        return _varint(buf, pos)[1]
    if wire == 1:
        return pos + 8
    if wire == 2:
        length, pos = _varint(buf, pos)
        return pos + length
    if wire == 5:
        return pos + 4
    raise RemoteWriteError(f"body is not a remote-write WriteRequest: wire type {wire}")


def write_request_counts(raw: bytes, *, max_series: int, max_samples: int) -> tuple[int, int]:
    """``(series, samples)`` of a serialized ``WriteRequest``, read from field tags and lengths.

    Nothing is built per sample; the scan stops (413) as soon as a cap is crossed, so a body
    of millions of samples costs the time to walk the first ``max_samples`` of them.
    """
    pos, end = 0, len(raw)
    series = samples = 0
    while pos < end:
        tag, pos = _varint(raw, pos)
        if tag >> 3 != _TIMESERIES or tag & 7 != 2:
            pos = _skip(raw, pos, tag & 7)
            continue
        length, pos = _varint(raw, pos)
        stop = pos + length
        if stop > end:
            raise RemoteWriteError("body is not a remote-write WriteRequest: truncated series")
        series += 1
        if series > max_series:
            raise RemoteWriteError(
                f"more than {max_series:,} series in one request (INGEST_MAX_SERIES)", status=413
            )
        while pos < stop:
            inner, pos = _varint(raw, pos)
            if inner == _SAMPLE_TAG:
                samples += 1
                if samples > max_samples:
                    raise RemoteWriteError(
                        f"at most {max_samples:,} samples per request; counted more before "
                        "decoding",
                        status=413,
                    )
            pos = _skip(raw, pos, inner & 7)
        if pos != stop:
            raise RemoteWriteError("body is not a remote-write WriteRequest: bad series length")
    if pos != end:
        raise RemoteWriteError("body is not a remote-write WriteRequest: truncated field")
    return series, samples


def _series_problem(labels, limits: DecodeLimits) -> str | None:
    # ``__name__`` is not a label in the text format; counted alike, the cap is the same.
    if sum(1 for label in labels if label.name != "__name__") > limits.max_labels:
        return "too_many_labels"
    for label in labels:
        if len(label.value) > limits.max_label_value_chars or len(label.name) > 200:
            return "label_too_long"
        if control_character_in(label.name) or control_character_in(label.value):
            return "label_control_character"
    return None


def _labels_fit(count: int, labels: dict[str, str], limits: DecodeLimits) -> bool:
    """Whether a series (``count`` labels, ``labels`` by name) certainly passes
    :func:`_series_problem` — the common case, checked with one length scan and one search
    over the joined strings instead of one per label."""
    if count - ("__name__" in labels) > limits.max_labels:
        return False
    if max(map(len, labels.values()), default=0) > limits.max_label_value_chars:
        return False
    if max(map(len, labels), default=0) > 200:
        return False
    # A space is no control character, so the joined text holds one exactly when a part does.
    return control_character_in(" ".join(labels) + " " + " ".join(labels.values())) is None


# Label sets known to pass ``_labels_fit`` (or not), per process; emptied when full.
_FITS: dict[tuple, bool] = {}
_MAX_FITS = 500_000


def decode_write_request(body: bytes, *, limits: DecodeLimits) -> Decoded:
    """The samples of every acceptable series in ``body``; ``line`` is the 1-based series."""
    if not body:
        raise RemoteWriteError("empty body: expected a snappy-compressed WriteRequest")
    declared = snappy_uncompressed_length(body)
    if declared > limits.max_uncompressed_bytes:
        raise RemoteWriteError(
            f"body decompresses to {declared:,} bytes, over the limit of "
            f"{limits.max_uncompressed_bytes:,}",
            status=413,
        )
    try:
        raw = bytes(cramjam.snappy.decompress_raw(body))
    except cramjam.DecompressionError as exc:
        raise RemoteWriteError(f"body is not valid snappy: {exc}") from None
    over_samples = raw.count(_SAMPLE_TAG_BYTE) > limits.max_samples
    if over_samples or raw.count(_SERIES_TAG_BYTE) > limits.max_series:
        # Only a body that could be over a cap pays for the exact count on the wire.
        write_request_counts(raw, max_series=limits.max_series, max_samples=limits.max_samples)
    request = remote_pb2.WriteRequest()
    try:
        request.ParseFromString(raw)
    except DecodeError as exc:
        raise RemoteWriteError(f"body is not a remote-write WriteRequest: {exc}") from None
    del raw
    types = {m.metric_family_name: _TYPES.get(m.type) for m in request.metadata}
    decoded = Decoded(samples=[], series=len(request.timeseries))
    append = decoded.samples.append
    if len(_FITS) >= _MAX_FITS:
        _FITS.clear()
    fits = _FITS
    fits_key = (limits.max_labels, limits.max_label_value_chars)
    for index, series in enumerate(request.timeseries, start=1):
        pairs = series.labels
        labels = {label.name: label.value for label in pairs}  # one pass over the objects
        # A fleet resends the same label sets every scrape: the check is memoised per set.
        key = (fits_key, tuple(labels.items()), len(pairs))
        fit = fits.get(key)
        if fit is None:
            fit = fits[key] = _labels_fit(len(pairs), labels, limits)
        if not fit:
            problem = _series_problem(pairs, limits)
            if problem is not None:
                decoded.dropped_series[problem] = decoded.dropped_series.get(problem, 0) + 1
                decoded.dropped_samples[problem] = decoded.dropped_samples.get(problem, 0) + len(
                    series.samples
                )
                continue
        name = labels.pop("__name__", "")
        if not name:
            raise RemoteWriteError(f"series {index}: no __name__ label", field="labels")
        family_type = types.get(name)
        for point in series.samples:
            append(
                ParsedSample(
                    name=name,
                    labels=labels,
                    value=point.value,
                    timestamp_ms=point.timestamp,
                    line=index,
                    family_type=family_type,
                )
            )
    return decoded
