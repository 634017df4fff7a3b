"""The byte format of a staged tick part (what one supernode's task hands to the join).

Format ``staged-part/1``: a zlib-compressed (level 1, fast) ``.npz`` archive (NumPy's zip
of ``.npy`` arrays, read with ``allow_pickle=False``) holding a JSON header — parts, the
steps' times and sparse rows, each dense kind's size and metric names, the tick's entity
keys — and the arrays: each step's dense positions and values, and part 0's saved engine
state as raw bytes. Nothing in it can execute code when read (the previous format was a
pickle: whoever could write a staged row could run code in the worker), and a part in an
unknown format is refused with a clear error.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib

import numpy as np

FORMAT = "staged-part/1"


class UnreadablePart(ValueError):
    """A staged part that is not in :data:`FORMAT` (e.g. staged by an older version)."""


def part_bytes(payload: dict) -> bytes:
    """``{"parts", "steps": [{"ts", "rows", "dense": {kind: (size, positions, {name:
    values})}}], optional "state" (bytes) and "keys" ({kind: [entity keys]})}`` → bytes."""
    # Every step's and kind's positions in one array and values in another (each kind a
    # metrics × positions block), located by offsets in the header: a zip member per array
    # made reading a part ~15× slower than the pickle it replaced.
    positions_parts: list[np.ndarray] = []
    value_parts: list[np.ndarray] = []
    at_position = at_value = 0
    steps = []
    for step in payload["steps"]:
        dense = []
        for kind, (size, positions, values) in step["dense"].items():
            positions = np.asarray(positions, np.int64)
            names = list(values)
            block = np.array(
                [np.asarray(values[name], np.float64) for name in names], np.float64
            ).reshape(len(names), positions.size)
            positions_parts.append(positions)
            value_parts.append(block.ravel())
            dense.append(
                {
                    "kind": kind,
                    "size": int(size),
                    "names": names,
                    "n": int(positions.size),
                    "positions_at": at_position,
                    "values_at": at_value,
                }
            )
            at_position += positions.size
            at_value += block.size
        rows = [[m, kind, key, float(v)] for m, kind, key, v in step["rows"]]
        steps.append({"ts": step["ts"], "rows": rows, "dense": dense})
    header = {"format": FORMAT, "parts": payload["parts"], "steps": steps}
    if "keys" in payload:
        header["keys"] = {kind: list(keys) for kind, keys in payload["keys"].items()}
    arrays = {
        "header": np.frombuffer(json.dumps(header).encode(), np.uint8),
        "positions": np.concatenate(positions_parts) if positions_parts else np.zeros(0, np.int64),
        "values": np.concatenate(value_parts) if value_parts else np.zeros(0, np.float64),
    }
    if "state" in payload:
        arrays["state"] = np.frombuffer(payload["state"], np.uint8)
    out = io.BytesIO()
    np.savez(out, **arrays)
    return zlib.compress(out.getvalue(), 1)


def part_from_bytes(blob: bytes) -> dict:
    """The payload :func:`part_bytes` wrote; :class:`UnreadablePart` for anything else."""
    try:
        with np.load(io.BytesIO(zlib.decompress(blob)), allow_pickle=False) as npz:
            header = json.loads(npz["header"].tobytes())
            if header.get("format") != FORMAT:
                raise UnreadablePart(f"staged part format {header.get('format')!r}")
            all_positions, all_values = npz["positions"], npz["values"]
            state = npz["state"].tobytes() if "state" in npz.files else None
    except (zlib.error, zipfile.BadZipFile, ValueError, KeyError, OSError) as error:
        if isinstance(error, UnreadablePart):
            raise
        raise UnreadablePart(f"not a {FORMAT} archive: {error}") from error
    steps = []
    for step in header["steps"]:
        dense = {}
        for kind in step["dense"]:
            n, names = kind["n"], kind["names"]
            positions = all_positions[kind["positions_at"] : kind["positions_at"] + n]
            block = all_values[kind["values_at"] : kind["values_at"] + n * len(names)]
            block = block.reshape(len(names), n)
            dense[kind["kind"]] = (kind["size"], positions, dict(zip(names, block, strict=True)))
        rows = [tuple(row) for row in step["rows"]]
        steps.append({"ts": step["ts"], "rows": rows, "dense": dense})
    payload = {"parts": header["parts"], "steps": steps}
    if "keys" in header:
        payload["keys"] = header["keys"]
    if state is not None:
        payload["state"] = state
    return payload
