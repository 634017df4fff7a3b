"""The one time parser: ISO 8601 or unix seconds, offsets within PostgreSQL's ±15:59, UTC out."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cluster_portal.web.times import TimeParseError, parse_instant


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-31T08:00:00Z", datetime(2026, 1, 31, 8, tzinfo=UTC)),
        ("2026-01-31T08:00:00+15:59", datetime(2026, 1, 30, 16, 1, tzinfo=UTC)),
        ("2026-01-31T08:00:00-15:59", datetime(2026, 1, 31, 23, 59, tzinfo=UTC)),
        ("1769846400", datetime(2026, 1, 31, 8, tzinfo=UTC)),
    ],
)
def test_accepted_times_come_back_in_utc(text, expected):
    parsed = parse_instant(text)
    assert parsed == expected and parsed.utcoffset().total_seconds() == 0


@pytest.mark.parametrize(
    "text", ["2026-01-31T08:00+16:00", "2026-01-31T08:00+23:00", "2026-01-31T08:00-16:00"]
)
def test_offsets_postgresql_refuses_are_refused_naming_the_limit(text):
    with pytest.raises(TimeParseError, match="15:59"):
        parse_instant(text)


@pytest.mark.parametrize(
    "text",
    ["2026-13-01T00:00", "2026-01-31T08:00+25:00", "soon", "1e20", "nan", "inf", "9" * 70, ""],
)
def test_nonsense_is_a_parse_error_never_an_exception_of_another_kind(text):
    with pytest.raises(TimeParseError):
        parse_instant(text)


def test_a_naive_time_is_read_in_the_portal_zone_unless_a_zone_is_required(settings):
    assert parse_instant("2026-01-31T08:00").tzinfo is not None
    with pytest.raises(TimeParseError, match="zone"):
        parse_instant("2026-01-31T08:00", require_zone=True)


def test_unix_seconds_can_be_refused_where_only_iso_makes_sense():
    with pytest.raises(TimeParseError, match="ISO 8601"):
        parse_instant("1769846400", unix_seconds=False)
