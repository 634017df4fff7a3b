"""The portal's number formatter: units, prefixes, whole numbers and per-language grouping."""

from __future__ import annotations

import pytest
from django.utils import translation

from cluster_portal.web.sorting import natural_key, natural_sorted
from cluster_portal.web.units import duration, format_value, iec, integer, number, percent, si


def test_a_p99_of_132_seconds_reads_in_minutes_not_milliseconds() -> None:
    assert duration(132.084) == "2.2 min"


def test_short_durations_pick_milliseconds_and_seconds() -> None:
    assert duration(0.0421) == "42.1 ms"
    assert duration(0.137) == "137 ms"
    assert duration(59.4) == "59.4 s"
    assert duration(0) == "0 s"
    assert duration(3 * 3600) == "3 h"
    assert duration(3 * 86400) == "3 d"


def test_whole_numbers_print_without_decimals() -> None:
    assert number(64.0) == "64"
    assert format_value(64.0, "count") == "64"
    assert number(1.50) == "1.5"


def test_large_numbers_are_grouped_by_thousands_in_english() -> None:
    with translation.override("en"):
        assert integer(10240) == "10,240"
        assert number(132084.0) == "132,084"


def test_large_numbers_are_grouped_by_thousands_in_simplified_chinese() -> None:
    with translation.override("zh-hans"):
        assert integer(10240) == "10,240"
        assert number(1234567.0) == "1,234,567"


def test_link_capacity_in_bytes_per_second_uses_si_prefixes() -> None:
    assert format_value(50_000_000_000, "bytes_per_second") == "50 GB/s"
    assert si(1.2e9, "B/s") == "1.2 GB/s"
    assert si(999.96, "W") == "1 kW"


def test_memory_in_bytes_uses_iec_prefixes() -> None:
    assert format_value(64 * 2**30, "bytes") == "64 GiB"
    assert iec(320 * 1024) == "320 KiB"
    assert iec(512) == "512 B"


def test_ratios_are_percentages_and_missing_values_a_dash() -> None:
    assert percent(0.875) == "87.5%"
    assert percent(1.0) == "100%"
    assert format_value(None, "ratio") == "—"
    assert format_value(float("nan"), "seconds") == "—"


def test_unknown_units_keep_their_name() -> None:
    assert format_value(3.0, "samples/s") == "3 samples/s"


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["r10", "r1", "r2", "r0"], ["r0", "r1", "r2", "r10"]),
        (
            ["sn1/node-10", "sn1/node-9", "sn10/node-1"],
            ["sn1/node-9", "sn1/node-10", "sn10/node-1"],
        ),
    ],
)
def test_rack_and_node_names_sort_naturally(names: list[str], expected: list[str]) -> None:
    assert natural_sorted(names) == expected
    assert sorted(names, key=natural_key) == expected


def test_durations_read_in_simplified_chinese() -> None:
    with translation.override("zh-hans"):
        assert duration(132.084) == "2.2 分钟"
        assert duration(0.0421) == "42.1 毫秒"
