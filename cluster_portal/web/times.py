"""The one parser for times people and scripts send (query parameters, filters, ranges).

ISO 8601 (``2026-01-31T08:00``, ``…Z``, ``…+08:00``) or, where allowed, unix seconds. Python
accepts UTC offsets up to ±23:59 but PostgreSQL's ``timestamptz`` refuses anything beyond
±15:59 ("time zone displacement out of range": a 500 if it reached a query), so such an offset
is refused here with a message naming the limit, and every accepted time is handed on in UTC.
A naive time is read in the portal's time zone unless the caller demands a zone. Impossible
dates (month 13, day 32) and absurd numbers (``1e20``, ``nan``) are refused, never raised.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import django_filters
from django import forms
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

# PostgreSQL's limit for a timestamptz's UTC offset.
MAX_OFFSET = timedelta(hours=15, minutes=59)
MAX_LENGTH = 64


class TimeParseError(ValueError):
    """The text is not a time this portal accepts; ``str()`` says why, for people."""


def parse_instant(value: str, *, unix_seconds: bool = True, require_zone: bool = False) -> datetime:
    """``value`` as an aware datetime in UTC, or :class:`TimeParseError` naming the problem."""
    text = (value or "").strip()
    if len(text) > MAX_LENGTH:
        raise TimeParseError(_("Too long for a time."))
    try:
        parsed = parse_datetime(text)
    except ValueError:  # well-formed but impossible: month 13, offset +25:00
        raise TimeParseError(_("Not a valid date and time.")) from None
    if parsed is None:
        if not unix_seconds:
            raise TimeParseError(_("Give an ISO 8601 time such as 2026-01-31T08:00:00Z."))
        try:
            seconds = float(text)
            if not math.isfinite(seconds):
                raise ValueError(text)
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (ValueError, OverflowError, OSError):
            raise TimeParseError(
                _("Give an ISO 8601 time such as 2026-01-31T08:00 or unix seconds.")
            ) from None
    if timezone.is_naive(parsed):
        if require_zone:
            raise TimeParseError(_("Give a time zone, e.g. 2026-11-29T12:00:00Z."))
        parsed = timezone.make_aware(parsed, timezone.get_current_timezone())
    offset = parsed.utcoffset()
    if offset is not None and abs(offset) > MAX_OFFSET:
        raise TimeParseError(_("The UTC offset must lie between -15:59 and +15:59."))
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 is before year 1 in UTC
        raise TimeParseError(_("Not a valid date and time.")) from None


class InstantField(forms.Field):
    """A form field over :func:`parse_instant` (ISO 8601 only; naive means the portal's zone)."""

    def to_python(self, value):
        if value in self.empty_values:
            return None
        try:
            return parse_instant(str(value), unix_seconds=False)
        except TimeParseError as exc:
            raise forms.ValidationError(str(exc), code="invalid") from None


class InstantFilter(django_filters.Filter):
    """A django-filter filter parsing with :func:`parse_instant` (a 400 naming the parameter)."""

    field_class = InstantField
