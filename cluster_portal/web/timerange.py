"""The dashboards' time range: ``?range=1h|6h|24h|7d|30d`` or ``?start=&end=`` (custom).

Parsing is strict and every error names the parameter, so a hand-edited URL gets a clear
400 instead of a silently different chart. Times go through the one parser
(``cluster_portal.web.times``): naive custom times (what an HTML ``datetime-local`` input
sends) are read in the portal's time zone, offsets PostgreSQL refuses are a 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from cluster_portal.web.times import TimeParseError, parse_instant

PRESETS: dict[str, timedelta] = {
    "1h": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}
PRESET_LABELS = {
    "1h": gettext_lazy("1 hour"),
    "6h": gettext_lazy("6 hours"),
    "24h": gettext_lazy("24 hours"),
    "7d": gettext_lazy("7 days"),
    "30d": gettext_lazy("30 days"),
}
DEFAULT_RANGE = "6h"
MIN_SPAN = timedelta(minutes=1)
MAX_SPAN = timedelta(days=400)


class TimeRangeError(ValueError):
    """An invalid range parameter; ``errors`` maps the parameter to a readable message."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


@dataclass(frozen=True)
class TimeRange:
    start: datetime
    end: datetime
    preset: str  # one of PRESETS, or "custom"

    @property
    def span(self) -> timedelta:
        return self.end - self.start

    def as_query(self) -> dict[str, str]:
        """The query parameters that reproduce this range (kept in page URLs)."""
        if self.preset == "custom":
            return {"start": self.start.isoformat(), "end": self.end.isoformat()}
        return {"range": self.preset}

    def as_json(self) -> dict[str, str]:
        return {"preset": self.preset, "start": self.start.isoformat(), "end": self.end.isoformat()}


def _parse_time(value: str, name: str) -> datetime:
    try:
        return parse_instant(value)
    except TimeParseError as exc:
        raise TimeRangeError({name: str(exc)}) from None


def parse_timerange(params: Mapping[str, str], *, now: datetime | None = None) -> TimeRange:
    """Read the range from query parameters; raises :class:`TimeRangeError` when invalid."""
    now = now or datetime.now(tz=UTC)
    start_raw, end_raw = params.get("start") or "", params.get("end") or ""
    preset = params.get("range") or ""
    if start_raw or end_raw:
        if preset and preset != "custom":
            raise TimeRangeError({"range": _("Give either range or start and end, not both.")})
        if not start_raw:
            raise TimeRangeError({"start": _("A custom range needs a start time.")})
        start = _parse_time(start_raw, "start")
        end = _parse_time(end_raw, "end") if end_raw else now
        if start >= end:
            raise TimeRangeError({"start": _("The start must be before the end.")})
        if end - start < MIN_SPAN:
            raise TimeRangeError({"end": _("The range must span at least one minute.")})
        if end - start > MAX_SPAN:
            raise TimeRangeError({"start": _("The range may span at most 400 days.")})
        if start > now:
            raise TimeRangeError({"start": _("The start lies in the future.")})
        return TimeRange(start=start, end=end, preset="custom")
    preset = preset or DEFAULT_RANGE
    if preset not in PRESETS:
        raise TimeRangeError(
            {"range": _("Unknown range; use one of %(choices)s.") % {"choices": ", ".join(PRESETS)}}
        )
    return TimeRange(start=now - PRESETS[preset], end=now, preset=preset)
