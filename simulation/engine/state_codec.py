"""State format 4: the engine state as one ``marshal`` stream, LZ4-compressed (issue 35 item 7).

Format 3 walked every cache entry in Python (tagging keys, checking each one's type, JSON on
top, then zlib): ~5× an engine step for one save + load. Format 4 walks only the state's
*containers* in Python (the clock, the mechanisms' fields, the cache objects' attributes:
~1,400 nodes per 50 services) and hands the bulk — the caches' maps, heaps and access
histories, most of the state's objects — to ``marshal`` whole, which writes and reads Python's
core types in C, tuples and lists kept apart. Arrays travel as their raw bytes.

Layout: ``MAGIC + b"\\x04" + crc32 (4 bytes, little-endian, of the compressed body) +
lz4_block(marshal({"version": 4, "scenario": <scenario JSON text>, "state": <tree>}))``.

The tree is made of plain values, plain ``dict`` with ``str`` keys (walked) and tagged
one-key dicts: ``$nd`` (dtype, shape, bytes), ``$np`` (a NumPy scalar), ``$od`` (an
``OrderedDict``: its keys and values as two lists), ``$raw`` (a container of core types, kept
as marshal gives it), ``$list`` / ``$tuple`` (walked), ``$ndlist`` (a list of 1-D arrays:
flat + lengths of the non-empty ones), ``$random``, ``$npgen`` and ``$obj`` (the cache
classes). Loading unmarshals core types only: it imports nothing, builds no class instance
from the data and calls nothing from it (the cache classes are rebuilt by name from a fixed
list, as in format 3). The crc32 turns truncated or corrupted bytes into a clear error
before anything is decoded.

Why ``marshal`` needs a check on save: it writes any object with the buffer protocol (a
NumPy scalar, an array) as ``bytes``, silently. Every ``$raw`` container is therefore
scanned for non-core types when saving (:meth:`_Raw.check`); one names the field, as format
3 did. The scan is part of the measured save time.
"""

from __future__ import annotations

import marshal
import random
import struct
import zlib
from collections import OrderedDict
from functools import cache
from itertools import chain, compress
from typing import Any

import cramjam
import numpy as np

VERSION = 4
_PLAIN = frozenset((int, float, str, bool, type(None)))


@cache
def _classes() -> dict[str, type]:
    from .memory.cache import LRUCache, LRUKCache

    return {"LRUCache": LRUCache, "LRUKCache": LRUKCache}


_CORE = frozenset((int, float, str, bool, type(None), tuple, list, dict))
_SEQ = (tuple, list)
_SEQS = frozenset(_SEQ)
_DICTS = frozenset((dict,))


class _Raw:
    """Containers handed to marshal whole, checked once the whole tree is encoded."""

    def __init__(self) -> None:
        self.items: list[tuple[str, Any]] = []

    def add(self, path: str, value: Any) -> dict[str, Any]:
        self.items.append((path, value))
        return {"$raw": value}

    def check(self) -> None:
        """Refuse any value below a raw container that is not a core type, naming the field.

        marshal would write a NumPy scalar or array (anything with the buffer protocol) as
        ``bytes`` without a word, so the containers are scanned level by level, their
        members' types collected in C (``set(map(type, ...))``): one pass over the objects,
        no copy; all containers at once, and one by one only to name the field at fault.
        """
        if _foreign([v for _, v in self.items]):
            for path, value in self.items:
                bad = _foreign([value])
                if bad:
                    raise TypeError(
                        f"state: {path} holds a {', '.join(bad)} inside a container; "
                        "the state format stores plain Python values there"
                    )


def _foreign(level: list[Any]) -> list[str]:
    """Names of the non-core types anywhere below ``level`` (empty when all are core).

    Every pass is C iteration (``map``, ``compress``, ``chain``): no Python code per object.
    """
    while level:
        kinds = list(map(type, level))
        types = set(kinds)
        if not types <= _CORE:
            return sorted(t.__name__ for t in types - _CORE)
        nxt: list[Any] = []
        if tuple in types or list in types:
            seqs = level if types <= _SEQS else compress(level, map(_SEQS.__contains__, kinds))
            nxt.extend(chain.from_iterable(seqs))
        if dict in types:
            is_map = map(_DICTS.__contains__, kinds)
            maps = level if types == {dict} else list(compress(level, is_map))
            nxt.extend(chain.from_iterable(maps))
            nxt.extend(chain.from_iterable(map(dict.values, maps)))
        level = nxt
    return []


def _is_array_list(value: list) -> bool:
    first = value[0]
    if not (isinstance(first, np.ndarray) and first.ndim == 1 and not first.dtype.hasobject):
        return False
    dtype = first.dtype
    return all(type(v) is np.ndarray and v.ndim == 1 and v.dtype == dtype for v in value)


def _encode(value: Any, raw: _Raw, path: str) -> Any:
    t = type(value)
    if t in _PLAIN:
        return value
    if t is np.ndarray:
        if value.dtype.hasobject:
            raise TypeError(f"state: {path} is an object array; store plain arrays")
        return {"$nd": (value.dtype.str, value.shape, value.tobytes())}
    if isinstance(value, np.generic):
        return {"$np": (value.dtype.str, value.item())}
    if t is dict and all(type(k) is str and not k.startswith("$") for k in value):
        return {k: _encode(v, raw, f"{path}.{k}") for k, v in value.items()}
    if t is OrderedDict:
        return {"$od": (raw.add(path, list(value)), raw.add(path, list(value.values())))}
    if t is list:
        if value and _is_array_list(value):
            # Per-job / per-service card lists: most are empty (jobs not running), so only the
            # non-empty ones are stored, flat, with their lengths.
            lens = np.fromiter(map(len, value), np.int64, len(value))
            nonempty = np.flatnonzero(lens)
            flat = (
                np.concatenate([value[i] for i in nonempty.tolist()])
                if nonempty.size
                else np.empty(0, value[0].dtype)
            )
            return {
                "$ndlist": (
                    value[0].dtype.str,
                    len(value),
                    nonempty.tobytes(),
                    lens[nonempty].tobytes(),
                    flat.tobytes(),
                )
            }
        if value and type(value[0]).__name__ in _classes():
            return {"$list": [_encode(v, raw, f"{path}[{i}]") for i, v in enumerate(value)]}
        return raw.add(path, value)
    if t is dict or t is tuple:
        return raw.add(path, value)
    if t is random.Random:
        return {"$random": raw.add(path, value.getstate())}
    if t is np.random.Generator:
        return {"$npgen": _encode(value.bit_generator.state, raw, path)}
    name = t.__name__
    if _classes().get(name) is t:
        return {"$obj": (name, _encode(vars(value), raw, f"{path}<{name}>"))}
    raise TypeError(f"state: {path} holds a {name}, which the state format does not store")


def _array(dtype: str, shape: Any, data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()  # writable, own memory


def _decode(value: Any) -> Any:
    if type(value) is not dict:
        return value
    if len(value) == 1:
        ((tag, body),) = value.items()
        if tag == "$raw":
            return body
        if tag == "$nd":
            return _array(*body)
        if tag == "$od":
            return OrderedDict(zip(body[0]["$raw"], body[1]["$raw"], strict=True))
        if tag == "$ndlist":
            dtype, n, nonempty, lens, flat = body
            idx = np.frombuffer(nonempty, np.int64)
            empty = np.empty(0, dtype)
            out = [empty] * n  # one shared empty array: nothing can be written into it
            if idx.size:
                pieces = np.split(
                    _array(dtype, -1, flat), np.cumsum(np.frombuffer(lens, np.int64))[:-1]
                )
                for i, piece in zip(idx.tolist(), pieces, strict=True):
                    out[i] = piece
            return out
        if tag == "$list":
            return [_decode(v) for v in body]
        if tag == "$np":
            return np.dtype(body[0]).type(body[1])
        if tag == "$random":
            rng = random.Random()
            rng.setstate(body["$raw"])
            return rng
        if tag == "$npgen":
            state = _decode(body)
            if state.get("bit_generator") != "PCG64":
                raise ValueError(f"state: unsupported bit generator {state.get('bit_generator')!r}")
            bit_generator = np.random.PCG64(0)  # seed irrelevant: the state is set next
            bit_generator.state = state
            return np.random.Generator(bit_generator)
        if tag == "$obj":
            cls = _classes().get(body[0])
            if cls is None:
                raise ValueError(f"state: unknown object type {body[0]!r}")
            obj = cls.__new__(cls)
            obj.__dict__.update(_decode(body[1]))
            return obj
        if tag.startswith("$"):
            raise ValueError(f"state: unknown tag {tag!r} in format {VERSION} data")
    return {k: _decode(v) for k, v in value.items()}


def dump(magic: bytes, scenario_json: str, tree: dict[str, Any]) -> bytes:
    """Format 4 bytes of ``tree`` (the state tree of :mod:`.state`) and the scenario's JSON."""
    raw = _Raw()
    encoded = _encode(tree, raw, "state")
    raw.check()
    # marshal version 2: no shared-reference table (format 3's JSON shared nothing either),
    # which writes ~7x and reads ~1.7x faster than version 4 for these many small objects.
    body = marshal.dumps({"version": VERSION, "scenario": scenario_json, "state": encoded}, 2)
    packed = bytes(cramjam.lz4.compress_block(body))
    return magic + bytes([VERSION]) + struct.pack("<I", zlib.crc32(packed)) + packed


def load(data: bytes, offset: int) -> tuple[str, dict[str, Any]]:
    """Inverse of :func:`dump` from ``offset`` (after the magic and version byte): the
    scenario's JSON text and the decoded state tree; ``ValueError`` on corrupt data."""
    if len(data) < offset + 4:
        raise ValueError(f"state: corrupt (format {VERSION}): truncated header")
    (crc,) = struct.unpack_from("<I", data, offset)
    packed = memoryview(data)[offset + 4 :]
    if zlib.crc32(packed) != crc:
        raise ValueError(f"state: corrupt (format {VERSION}): checksum mismatch")
    try:
        payload = marshal.loads(bytes(cramjam.lz4.decompress_block(packed)))
    except (cramjam.DecompressionError, ValueError, EOFError, TypeError) as exc:
        raise ValueError(f"state: corrupt (format {VERSION}): {exc}") from None
    if type(payload) is not dict or payload.get("version") != VERSION:
        raise ValueError(f"state: corrupt (format {VERSION}): bad payload")
    return payload["scenario"], _decode(payload["state"])
