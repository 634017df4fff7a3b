"""Fast JSON bodies for large read payloads (the dashboards' charts and tables).

DRF's :class:`~rest_framework.renderers.JSONRenderer` goes through the standard library's
encoder: a 400 KiB overview payload took ~7 ms of a ~100 ms request. orjson writes the same
compact UTF-8 JSON in about a millisecond. Lazy translations, ``Decimal`` and anything else
orjson does not know are handed to DRF's own encoder, so the output matches DRF's; requests
asking for indented JSON still go through DRF.

One difference, on purpose: a NaN or infinity, which DRF refuses (strict JSON), is written as
``null`` — what a missing value is on every chart and table.
"""

from __future__ import annotations

from typing import Any

import orjson
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

_DRF_ENCODER = JSONEncoder()
# Datetimes go to DRF's encoder too, so they read as DRF writes them ("…Z", milliseconds).
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_PASSTHROUGH_DATETIME


def _fallback(value: Any) -> Any:
    # Lazy translation strings, datetimes, Decimal, querysets …: DRF's encoder decides.
    return _DRF_ENCODER.default(value)


def json_bytes(data: Any) -> bytes:
    """``data`` as compact UTF-8 JSON (see the module docstring)."""
    return orjson.dumps(data, default=_fallback, option=_OPTIONS)


def with_key(body: bytes, key: str, value: Any) -> bytes:
    """A JSON object's bytes with ``key: value`` added at the end, without decoding the rest
    (a cached snapshot payload plus the range this reader asked for). ``key`` must not be in
    ``body`` already."""
    if not body.startswith(b"{") or not body.endswith(b"}"):
        raise ValueError("not a JSON object")
    entry = json_bytes(key) + b":" + json_bytes(value)
    return body[:-1] + (b"," if body != b"{}" else b"") + entry + b"}"


class FastJSONRenderer(JSONRenderer):
    """DRF's JSON renderer with orjson underneath (compact output only)."""

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if data is None:
            return b""
        if self.get_indent(accepted_media_type or "", renderer_context or {}):
            return super().render(data, accepted_media_type, renderer_context)
        return json_bytes(data)
