"""The bounds every ingestion path applies, in one place (settings ``INGEST_*``/``TELEMETRY_*``).

JSON batches, pushed Prometheus text and scraped exporters all call these, so a sample time,
a value, a name or a label is accepted or refused identically wherever it arrives, and a
refusal is an :class:`~telemetry.errors.IngestionError` (400 naming the field), never a 500.
"""

from __future__ import annotations

import math
import time

from django.conf import settings

from telemetry.errors import IngestionError
from telemetry.families.parse import control_character_in

# Longest names the store keeps (model max_length): metric names, entity keys, clusters.
MAX_METRIC_CHARS = 200
MAX_ENTITY_KEY_CHARS = 300
MAX_CLUSTER_CHARS = 60
MAX_BATCH_SAMPLES = 100_000  # the documented cap (reachable: bodies up to INGEST_MAX_BODY_BYTES)


def limit(name: str) -> int | float:
    return getattr(settings, name)


def text_problem(value: str, *, max_chars: int) -> str | None:
    """Why ``value`` is refused as a name or label: ``label_too_long``,
    ``label_control_character``, or ``None`` (fine). The one rule behind :func:`check_text`;
    remote-write drops a series for it instead of refusing the request."""
    if len(value) > max_chars:
        return "label_too_long"
    if control_character_in(value) is not None:
        return "label_control_character"
    return None


def check_text(value: str, *, field: str, max_chars: int, row: int | None = None) -> str:
    """``value`` unless it is too long or holds NUL/control/format characters (400)."""
    problem = text_problem(value, max_chars=max_chars)
    if problem == "label_too_long":
        raise IngestionError(
            f"{field} is longer than {max_chars} characters",
            row=row,
            field=field,
            reason="label_too_long",
        )
    if problem is not None:
        bad = control_character_in(value)
        raise IngestionError(
            f"{field} contains a control character (U+{ord(bad.group()):04X})",
            row=row,
            field=field,
            reason="label_control_character",
        )
    return value


def time_window(now: float | None = None) -> tuple[float, float]:
    """``(earliest, latest)`` accepted sample time in unix seconds."""
    now = time.time() if now is None else now
    return now - limit("TELEMETRY_MAX_PAST_SECONDS"), now + limit("TELEMETRY_MAX_FUTURE_SECONDS")


def check_timestamp(
    seconds: float, *, window: tuple[float, float], row: int | None = None, field: str = "ts"
) -> float:
    earliest, latest = window
    if not math.isfinite(seconds) or not earliest <= seconds <= latest:
        past = limit("TELEMETRY_MAX_PAST_SECONDS")
        future = limit("TELEMETRY_MAX_FUTURE_SECONDS")
        raise IngestionError(
            f"{field} is outside the accepted window (at most {past} s in the past and "
            f"{future} s in the future: TELEMETRY_MAX_PAST_SECONDS / _FUTURE_SECONDS)",
            row=row,
            field=field,
            reason="timestamp_out_of_range",
        )
    return seconds


def check_value(value: float, *, row: int | None = None, field: str = "value") -> float:
    if not math.isfinite(value):
        raise IngestionError("value must be finite (no NaN or infinity)", row=row, field=field)
    bound = limit("TELEMETRY_MAX_ABS_VALUE")
    if abs(value) > bound:
        raise IngestionError(
            f"value magnitude is over {bound:g} (TELEMETRY_MAX_ABS_VALUE)",
            row=row,
            field=field,
            reason="value_out_of_range",
        )
    return value


def check_count(count: int, *, cap: str, what: str, field: str) -> None:
    """400 naming the cap when ``count`` exceeds setting ``cap``."""
    bound = limit(cap)
    if count > bound:
        raise IngestionError(
            f"more than {bound} {what} ({cap})", field=field, reason=_CAP_REASONS.get(cap)
        )


_CAP_REASONS = {
    "TELEMETRY_MAX_NEW_ENTITIES_PER_PUSH": "too_many_new_entities",
    "TELEMETRY_MAX_ENTITIES_PER_CLUSTER": "too_many_new_entities",
    "TELEMETRY_MAX_NEW_METRICS_PER_PUSH": "too_many_new_metrics",
    "TELEMETRY_MAX_UNMAPPED_METRICS": "too_many_new_metrics",
}
