"""How a frame's arrays are stored: plain little-endian bytes, or byte-shuffled and compressed.

Plain is the original layout (``array.tobytes()``); every frame written before compression
existed is plain, and so is any array that compression would not make at least 10% smaller.
Compressed arrays (``TELEMETRY_FRAME_COMPRESSION``, on by default with SQLite, the demo, where
the file has no compression of its own) are the array's bytes transposed so that byte *k* of
every value is adjacent (NaN, zero counts and similar exponents then form long runs), then
zstd at level 1. A per-workload array that has a value for only the 20 serving workloads out
of 6,395 (the ``inference_*`` metrics) drops from 25 kB to ~100 bytes, so the entities without
a value cost next to nothing, whatever the layout.

The two are told apart by length: a plain array is a whole number of 4- or 8-byte values
(length ≡ 0 mod 4); a compressed one is ``MAGIC, pad, zstd bytes, pad zero bytes`` with
``pad`` chosen so its length is ≡ 1 mod 4. So no row needs a flag, no migration rewrites
anything, and readers that cut one entity's value out in SQL (``substr``) take the whole,
small, value only when it is compressed (:func:`entity_cut`).

PostgreSQL already compresses these columns (TOAST, LZ4 since migration 0016), so there the
setting is off by default: a cut stays a ``substr``.
"""

from __future__ import annotations

import cramjam
import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import BinaryField, F, Func

MAGIC = 0xF5
_HEADER = 2
# Arrays this short are not worth a compressor call (and a cut of them is cheap anyway).
_MIN_BYTES = 256
# Compression must save at least this share of the bytes, else the array is stored plain
# (keeps dense arrays cheap to cut in SQL and cheap to read).
_MIN_SAVING = 0.10


def compression_enabled() -> bool:
    """Whether new arrays are stored compressed (read at each write: tests override it)."""
    configured = getattr(settings, "TELEMETRY_FRAME_COMPRESSION", None)
    if configured is None:
        return connection.vendor == "sqlite"
    return bool(configured)


def frame_bytes(array: np.ndarray, *, compress: bool | None = None) -> bytes:
    """The stored form of ``array``: compressed when enabled and worth it, plain otherwise."""
    plain = array.tobytes()
    if compress is None:
        compress = compression_enabled()
    if not compress or len(plain) < _MIN_BYTES:
        return plain
    itemsize = array.dtype.itemsize
    shuffled = np.ascontiguousarray(array).view(np.uint8).reshape(-1, itemsize).T.tobytes()
    packed = bytes(cramjam.zstd.compress(shuffled, level=1))
    length = _HEADER + len(packed)
    if length > len(plain) * (1 - _MIN_SAVING):
        return plain
    pad = (1 - length) % 4
    return bytes((MAGIC, pad)) + packed + b"\0" * pad


def is_compressed(blob: bytes | memoryview) -> bool:
    return len(blob) % 4 != 0


def frame_array(blob: bytes | memoryview, dtype) -> np.ndarray:
    """The array a stored value holds, whichever form it was stored in."""
    data = bytes(blob)
    if not is_compressed(data):
        return np.frombuffer(data, dtype)
    if data[0] != MAGIC:
        raise ValueError(f"frame value of {len(data)} bytes is neither plain nor compressed")
    packed = data[_HEADER : len(data) - data[1]]
    itemsize = np.dtype(dtype).itemsize
    shuffled = np.frombuffer(bytes(cramjam.zstd.decompress(packed)), np.uint8)
    return shuffled.reshape(itemsize, -1).T.copy().view(dtype).reshape(-1)


def frame_value(blob: bytes | memoryview, dtype, index: int):
    """Entity ``index``'s value from what :func:`entity_cut` returned: the cut itself
    (plain arrays) or the whole compressed array."""
    data = bytes(blob)
    if is_compressed(data):
        return frame_array(data, dtype)[index]
    return np.frombuffer(data, dtype)[0]


def entity_cut(field: str, index: int, width: int, size: int) -> Func:
    """An expression for entity ``index``'s bytes of ``field`` in a layout of ``size``
    entities: a ``substr`` of a plain array, the whole value of a compressed one (read it
    with :func:`frame_value`). The numbers are ints, inlined in the SQL."""
    whole = int(size) * int(width)
    start = int(index) * int(width) + 1
    return Func(
        F(field),
        template=(
            f"CASE WHEN length(%(expressions)s) = {whole} "
            f"THEN substr(%(expressions)s, {start}, {int(width)}) ELSE %(expressions)s END"
        ),
        output_field=BinaryField(),
    )
