"""When the day window of a calendar starts and ends, in UTC, from local wall-clock times.

Pure Python (``zoneinfo``), so the twin's what-if can use the same arithmetic. A day window
may cross midnight (``day_end`` < ``day_start``); night is its complement.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class DayWindow:
    """The day window's wall-clock bounds in one IANA time zone."""

    day_start: time
    day_end: time
    tz: str = "UTC"

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    @property
    def duration(self) -> timedelta:
        start = datetime.combine(date(2000, 1, 1), self.day_start)
        end = datetime.combine(date(2000, 1, 1), self.day_end)
        if end <= start:
            end += timedelta(days=1)
        return end - start

    def _window_starting(self, day: date) -> tuple[datetime, datetime]:
        start = datetime.combine(day, self.day_start, tzinfo=self.zone).astimezone(UTC)
        return start, start + self.duration

    def current_or_next_day(self, now: datetime) -> tuple[datetime, datetime]:
        """The day window holding ``now``, else the next one to start (UTC bounds)."""
        local = now.astimezone(self.zone).date()
        for offset in (-1, 0, 1, 2):
            start, end = self._window_starting(local + timedelta(days=offset))
            if end > now:
                return start, end
        raise AssertionError("a day window starts within two days")  # pragma: no cover

    def in_day(self, now: datetime) -> bool:
        start, end = self.current_or_next_day(now)
        return start <= now < end

    def next_day_start(self, now: datetime) -> datetime:
        """The first day-window start at or after ``now``."""
        start, _ = self.current_or_next_day(now)
        if start >= now:
            return start
        return self._window_starting(start.astimezone(self.zone).date() + timedelta(days=1))[0]

    def night_start(self, now: datetime) -> datetime | None:
        """When the night begins if ``now`` is in the day window, else ``None`` (it is night)."""
        start, end = self.current_or_next_day(now)
        return end if start <= now < end else None

    def is_day_hour(self, moment: datetime) -> bool:
        return self.in_day(moment)
