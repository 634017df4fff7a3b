"""Readers for the three trace formats of DESIGN.md section 4.

* Azure LLM inference CSV: ``TIMESTAMP,ContextTokens,GeneratedTokens`` with timestamps like
  ``2023-11-16 18:17:03.9799600`` (7 fractional digits: parsed by hand, ``%f`` takes only 6).
* Mooncake JSONL: ``{"timestamp": ms, "input_length", "output_length", "hash_ids": [...]}``;
  equal ids are reusable 512-token KV blocks.
* Philly-derived training CSV: ``timestamp,duration,num_gpus,gpu_time,cluster``.

A bad row raises :class:`TraceError` (a ``ValueError``) naming file, line and column.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

MOONCAKE_BLOCK_TOKENS = 512


class TraceError(ValueError):
    """A malformed trace row: carries ``path``, ``line`` (1-based) and ``column``."""

    def __init__(self, path: str | Path, line: int, column: str, msg: str) -> None:
        self.path, self.line, self.column = str(path), line, column
        super().__init__(f"{path}:{line}: column {column!r}: {msg}")


_TS = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")


def parse_azure_timestamp(text: str) -> float:
    """Seconds since the epoch (UTC, naive) for ``YYYY-MM-DD HH:MM:SS[.fffffff]``."""
    m = _TS.match(text.strip())
    if not m:
        raise ValueError(f"bad timestamp {text!r}")
    y, mo, d, h, mi, s, frac = m.groups()
    base = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s)).timestamp()
    return base + (int(frac) / 10 ** len(frac) if frac else 0.0)


def _num(path, line, col, text, kind=float, minimum=0.0):
    try:
        v = kind(text)
    except (TypeError, ValueError):
        raise TraceError(path, line, col, f"not a number: {text!r}") from None
    if isinstance(v, float) and not math.isfinite(v):
        raise TraceError(path, line, col, f"not finite: {text!r}")
    if v < minimum:
        raise TraceError(path, line, col, f"must be >= {minimum}: {text!r}")
    return v


def _csv_rows(path: Path, header: list[str]):
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        try:
            first = next(reader)
        except StopIteration:
            raise TraceError(path, 1, header[0], "empty file") from None
        got = [h.strip() for h in first]
        if got[: len(header)] != header:
            missing = next(
                (h for i, h in enumerate(header) if i >= len(got) or got[i] != h), header[0]
            )
            raise TraceError(path, 1, missing, f"expected header {','.join(header)}")
        for row in reader:
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) < len(header):
                raise TraceError(path, reader.line_num, header[len(row)], "missing value")
            yield reader.line_num, row


@dataclass
class InferenceTrace:
    """Request arrivals (seconds from trace start) with prompt and output token counts."""

    t: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    # Mooncake block ids per request (None for Azure traces) and, for a replay window, the
    # row of each request in the full trace (so its block ids can be found).
    hash_ids: list | None = None
    src: np.ndarray | None = None

    def rate_curve(self, bin_seconds: float) -> list[float]:
        """Requests per bin, normalised to mean 1 (a demand multiplier curve)."""
        if self.t.size == 0:
            raise ValueError("trace: no requests")
        n = max(int(math.ceil((self.t.max() + 1e-9) / bin_seconds)), 1)
        counts = np.bincount(
            np.minimum((self.t // bin_seconds).astype(int), n - 1), minlength=n
        ).astype(float)
        return (counts / counts.mean()).tolist()

    def interarrival_cv(self) -> float:
        """Coefficient of variation of inter-arrival times (burstiness)."""
        d = np.diff(np.sort(self.t))
        return float(d.std() / d.mean()) if d.size > 1 and d.mean() > 0 else 1.0


def read_azure(path: str | Path) -> InferenceTrace:
    """Read an Azure LLM inference trace CSV."""
    path = Path(path)
    ts, pr, out = [], [], []
    for line, row in _csv_rows(path, ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]):
        try:
            ts.append(parse_azure_timestamp(row[0]))
        except ValueError as exc:
            raise TraceError(path, line, "TIMESTAMP", str(exc)) from None
        pr.append(_num(path, line, "ContextTokens", row[1], int))
        out.append(_num(path, line, "GeneratedTokens", row[2], int))
    t = np.array(ts, dtype=float)
    if t.size:
        t -= t.min()
    return InferenceTrace(t, np.array(pr, dtype=float), np.array(out, dtype=float))


@dataclass
class MooncakeRequest:
    """One Mooncake request: arrival (ms), lengths and its 512-token block hash ids."""

    timestamp_ms: float
    input_length: int
    output_length: int
    hash_ids: list[int]


def read_mooncake(path: str | Path) -> list[MooncakeRequest]:
    """Read a Mooncake JSONL trace (one JSON object per line)."""
    path = Path(path)
    out = []
    with open(path, encoding="utf-8") as fh:
        for line, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                raise TraceError(
                    path, line, f"char {exc.colno}", f"invalid JSON: {exc.msg}"
                ) from None
            if not isinstance(obj, dict):
                raise TraceError(path, line, "-", "expected a JSON object")
            vals = {}
            for col, kind in (("timestamp", float), ("input_length", int), ("output_length", int)):
                if col not in obj:
                    raise TraceError(path, line, col, "missing")
                v = obj[col]
                if (
                    isinstance(v, bool)
                    or not isinstance(v, (int, float))
                    or (kind is int and not float(v).is_integer())
                ):
                    raise TraceError(path, line, col, f"expected a number, got {v!r}")
                if v < 0:
                    raise TraceError(path, line, col, f"must be >= 0, got {v!r}")
                vals[col] = kind(v)
            ids = obj.get("hash_ids")
            if not isinstance(ids, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in ids
            ):
                raise TraceError(path, line, "hash_ids", "expected a list of integers")
            out.append(
                MooncakeRequest(vals["timestamp"], vals["input_length"], vals["output_length"], ids)
            )
    return out


@dataclass
class TrainingTraceJob:
    """One Philly-derived job: submit time and duration (s), GPUs, GPU-seconds, cluster."""

    timestamp: float
    duration: float
    num_gpus: int
    gpu_time: float
    cluster: str
    min_gpus: int | None = None
    max_gpus: int | None = None
    epoch: float = 0.0  # absolute submit time (epoch seconds, or the raw number) of the row


def _philly_timestamp(path, line, text: str) -> float:
    """Date-time ``2017-10-09 07:01:55`` (naive, read as UTC) or numeric seconds."""
    t = text.strip()
    if _TS.match(t):
        return parse_azure_timestamp(t)
    return _num(path, line, "timestamp", t)


def read_philly(path: str | Path) -> list[TrainingTraceJob]:
    """Read a Philly/Helios-style training CSV.

    ``timestamp`` is a date-time (``2017-10-09 07:01:55``) or numeric seconds; ``duration`` in
    seconds. Optional extra columns ``min_gpus`` / ``max_gpus`` give elastic bounds. Times are
    returned relative to the earliest row (``epoch`` keeps the absolute value).
    """
    path = Path(path)
    jobs = []
    header = ["timestamp", "duration", "num_gpus", "gpu_time", "cluster"]
    with open(path, newline="", encoding="utf-8") as fh:
        first = next(csv.reader(fh), [])
    extra = {h.strip(): i for i, h in enumerate(first) if i >= len(header)}
    for line, row in _csv_rows(path, header):
        ts = _philly_timestamp(path, line, row[0])
        dur = _num(path, line, "duration", row[1])
        gpus = _num(path, line, "num_gpus", row[2], int, 1)
        gt = _num(path, line, "gpu_time", row[3])
        cl = row[4].strip()
        if not cl:
            raise TraceError(path, line, "cluster", "empty")
        bounds = []
        for col in ("min_gpus", "max_gpus"):
            k = extra.get(col)
            txt = row[k].strip() if k is not None and k < len(row) else ""
            bounds.append(_num(path, line, col, txt, int, 1) if txt else None)
        lo, hi = bounds
        if lo is not None and lo > gpus:
            raise TraceError(path, line, "min_gpus", f"larger than num_gpus ({lo} > {gpus})")
        if hi is not None and hi < gpus:
            raise TraceError(path, line, "max_gpus", f"smaller than num_gpus ({hi} < {gpus})")
        jobs.append(TrainingTraceJob(ts, dur, gpus, gt, cl, lo, hi, ts))
    if jobs:
        t0 = min(j.timestamp for j in jobs)
        for j in jobs:
            j.timestamp -= t0
    return jobs


def parse_trace_arg(text: str, expected: str) -> Path:
    """Split ``kind:FILE`` (as given on the command line); ``ValueError`` if the kind differs."""
    kind, sep, file = text.partition(":")
    if not sep or kind != expected or not file:
        raise ValueError(f"expected {expected}:FILE, got {text!r}")
    return Path(file)


_OFFSET = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw]?)$")
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_start(text: str | None, jobs: list[TrainingTraceJob]) -> float:
    """Offset (s) into a training trace: ``40d``, ``12h``, ``90m``, seconds, or a date/time.

    A date (``2017-11-18``) or date-time is matched against the rows' absolute timestamps.
    """
    if text is None or str(text).strip() == "":
        return 0.0
    t = str(text).strip()
    m = _OFFSET.match(t)
    if m:
        return float(m.group(1)) * _UNIT[m.group(2)]
    if re.match(r"^\d{4}-\d{2}-\d{2}$", t):
        t += " 00:00:00"
    if not _TS.match(t):
        raise ValueError(f"start: expected an offset like 40d/12h/90m or a date, got {text!r}")
    if not jobs:
        return 0.0
    origin = min(j.epoch for j in jobs)
    return parse_azure_timestamp(t) - origin
