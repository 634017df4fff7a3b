"""The remote-write decoder counts on the wire before it builds, and drops bad series alone."""

from __future__ import annotations

import cramjam
import pytest

from telemetry.families.exposition import PrometheusParseError, parse_text
from telemetry.ingest.pipeline import parse_limits
from telemetry.receivers.remote_write import remote_pb2
from telemetry.receivers.remote_write.decode import (
    DecodeLimits,
    RemoteWriteError,
    decode_write_request,
    write_request_counts,
)
from telemetry.receivers.remote_write.service import decode_limits
from tests.remote_write_bombs import sample, series
from tests.telemetry.remote_write_helpers import write_request

LIMITS = DecodeLimits(
    max_uncompressed_bytes=8 * 2**20,
    max_series=1000,
    max_samples=1000,
    max_labels=64,
    max_label_value_chars=1024,
)


def _raw(body: bytes) -> bytes:
    return bytes(cramjam.snappy.decompress_raw(body))


def test_counting_on_the_wire_agrees_with_the_generated_classes():
    body = write_request(
        [
            ({"__name__": "a", "x": "1"}, [(1, 1.0), (2, 2.0), (3, 3.0)]),
            ({"__name__": "b"}, []),
            ({"__name__": "c", "y": "2"}, [(4, 4.0)]),
        ]
    )
    request = remote_pb2.WriteRequest()
    request.ParseFromString(_raw(body))
    expected = (len(request.timeseries), sum(len(t.samples) for t in request.timeseries))
    assert write_request_counts(_raw(body), max_series=10, max_samples=10) == expected == (3, 4)


def test_the_count_stops_at_the_first_sample_over_the_cap():
    raw = series({"__name__": "a"}, sample(1, 1.0) * 11)
    with pytest.raises(RemoteWriteError) as refused:
        write_request_counts(raw, max_series=10, max_samples=10)
    assert refused.value.status == 413
    with pytest.raises(RemoteWriteError, match="more than 1 series"):
        write_request_counts(raw * 2, max_series=1, max_samples=100)


@pytest.mark.parametrize(
    "raw",
    [
        b"\x0a\x80",  # a length varint cut short
        b"\x0a\x05\x12",  # a series longer than the body
        series({"__name__": "a"}, b"\x12\x7f"),  # a sample longer than its series
        b"\x0f",  # wire type 7 does not exist
    ],
)
def test_malformed_wire_data_is_a_400(raw):
    with pytest.raises(RemoteWriteError) as refused:
        write_request_counts(raw, max_series=10, max_samples=10)
    assert refused.value.status == 400


def test_the_declared_size_is_checked_before_decompressing():
    body = bytes(cramjam.snappy.compress_raw(b"\x00" * (LIMITS.max_uncompressed_bytes + 1)))
    with pytest.raises(RemoteWriteError, match="decompresses to") as refused:
        decode_write_request(body, limits=LIMITS)
    assert refused.value.status == 413


def test_series_with_too_many_long_or_control_labels_are_dropped_per_reason():
    many = {f"l{i:03}": "v" for i in range(65)}
    body = write_request(
        [
            ({"__name__": "ok", "a": "b"}, [(1, 1.0)]),
            ({"__name__": "wide", **many}, [(1, 1.0), (2, 2.0)]),
            ({"__name__": "long", "pod": "p" * 1025}, [(1, 1.0)]),
            ({"__name__": "ctl", "pod": "p\u202e"}, [(1, 1.0)]),
        ]
    )
    decoded = decode_write_request(body, limits=LIMITS)
    assert [s.name for s in decoded.samples] == ["ok"] and decoded.series == 4
    assert decoded.dropped_series == {
        "too_many_labels": 1,
        "label_too_long": 1,
        "label_control_character": 1,
    }
    assert decoded.dropped_samples["too_many_labels"] == 2


def test_text_and_remote_write_share_the_label_cap(settings):
    settings.INGEST_MAX_LABELS = 5
    text_limits, rw_limits = parse_limits(), decode_limits()
    assert text_limits.max_labels == rw_limits.max_labels == 5
    assert text_limits.max_label_value_chars == rw_limits.max_label_value_chars
    labels = ",".join(f'l{i}="v"' for i in range(6))
    with pytest.raises(PrometheusParseError, match="more than 5 labels"):
        parse_text(f"m{{{labels}}} 1\n", limits=text_limits)  # text: the push is refused
    raw = series({"__name__": "m", **{f"l{i}": "v" for i in range(6)}}, sample(1, 1.0))
    decoded = decode_write_request(bytes(cramjam.snappy.compress_raw(raw)), limits=rw_limits)
    assert decoded.samples == [] and decoded.dropped_series == {"too_many_labels": 1}
