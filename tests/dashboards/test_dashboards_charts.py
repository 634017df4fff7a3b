"""Chart builders, time-range parsing and CSV cells: pure functions, no database."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pytest

from cluster_portal.web.csv import csv_cell
from cluster_portal.web.timerange import TimeRangeError, parse_timerange
from dashboards import charts
from dashboards.payloads.common import fmt, series_table

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)


def points(*values):
    return [(T0 + timedelta(minutes=i), v) for i, v in enumerate(values)]


def test_timeseries_has_one_trace_per_series_with_gaps_for_missing_values():
    figure = charts.timeseries({"a": points(0.1, math.nan), "b": points(1.0)}, title="t")
    assert [t["name"] for t in figure["data"]] == ["a", "b"]
    assert figure["data"][0]["y"] == [0.1, None]
    assert figure["data"][0]["x"][0] == T0.isoformat()
    json.dumps(figure, allow_nan=False)  # NaN would break the browser's JSON parser


def test_series_get_distinct_colour_blind_safe_colours():
    figure = charts.timeseries({str(i): points(1) for i in range(3)}, title="t")
    colours = [t["line"]["color"] for t in figure["data"]]
    assert len(set(colours)) == 3 and all(c in charts.OKABE_ITO for c in colours)


def test_utilization_area_stacks_areas_and_dashes_overlay_lines():
    figure = charts.utilization_area(
        {"training": points(1, 2), "inference": points(3, 4)},
        lines={"healthy": points(8, 8)},
        title="cards",
    )
    stacked = [t for t in figure["data"] if t.get("stackgroup")]
    assert [t["name"] for t in stacked] == ["training", "inference"]
    line = figure["data"][-1]
    assert line["name"] == "healthy" and line["line"]["dash"] == "dash"


def test_heatmap_carries_drill_down_links_and_rejects_a_wrong_shape():
    figure = charts.heatmap(
        [[0.5, None], [0.1, 0.9]],
        x_labels=["r0", "r1"],
        y_labels=["sn0", "sn1"],
        title="util",
        links=[["/a", None], ["/c", "/d"]],
        z_range=(0, 1),
    )
    trace = figure["data"][0]
    assert trace["z"] == [[0.5, None], [0.1, 0.9]]
    assert trace["customdata"][1][1] == "/d"
    assert (trace["zmin"], trace["zmax"]) == (0, 1)
    assert trace["colorscale"] == charts.HEATMAP_COLORSCALE
    with pytest.raises(ValueError):
        charts.heatmap([[1.0]], x_labels=["a", "b"], y_labels=["x"], title="bad")


def test_bars_and_has_data():
    figure = charts.bars(["sn0", "sn1"], {"live": [1.0, None]}, title="b", stacked=True)
    assert figure["layout"]["barmode"] == "stack"
    assert charts.has_data(figure)
    assert not charts.has_data(charts.timeseries({"a": []}, title="empty"))
    assert not charts.has_data(charts.heatmap([[None]], x_labels=["a"], y_labels=["b"], title="h"))


def test_series_table_aligns_series_on_one_time_axis():
    table = series_table({"a": points(1, 2), "b": points(5)})
    assert table["columns"] == ["ts", "a", "b"]
    assert table["rows"] == [
        [T0.isoformat(), 1, 5],
        [(T0 + timedelta(minutes=1)).isoformat(), 2, None],
    ]


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (None, "ratio", "—"),
        (0.456, "ratio", "45.6%"),
        (0.25, "seconds_as_ms", "250 ms"),
        (3 * 2**30, "bytes", "3 GiB"),
    ],
)
def test_kpi_formatting(value, unit, shown):
    assert fmt(value, unit) == shown


def test_csv_cells_neutralise_formulas_but_keep_negative_numbers():
    assert csv_cell("=cmd()") == "'=cmd()"
    assert csv_cell(-1.5) == "-1.5"
    assert csv_cell(None) == "" and csv_cell(math.nan) == ""
    assert csv_cell(T0) == T0.isoformat()


@pytest.mark.parametrize("preset", ["1h", "6h", "24h", "7d", "30d"])
def test_presets_end_now(preset):
    tr = parse_timerange({"range": preset}, now=NOW)
    assert tr.end == NOW and tr.preset == preset and tr.as_query() == {"range": preset}


def test_default_range_is_six_hours():
    tr = parse_timerange({}, now=NOW)
    assert tr.span == timedelta(hours=6) and tr.preset == "6h"


def test_custom_range_accepts_iso_naive_local_times_and_unix_seconds():
    tr = parse_timerange({"start": "2026-01-30T08:00", "end": str(NOW.timestamp())}, now=NOW)
    assert tr.preset == "custom" and tr.end == NOW
    assert tr.start == datetime(2026, 1, 30, 8, 0, tzinfo=UTC)  # portal time zone is UTC


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"range": "2w"}, "range"),
        ({"start": "yesterday"}, "start"),
        ({"end": "2026-01-31T10:00Z"}, "start"),
        ({"start": "2026-01-31T10:00Z", "end": "2026-01-31T09:00Z"}, "start"),
        ({"start": "2026-01-31T10:00Z", "end": "2026-01-31T10:00:30Z"}, "end"),
        ({"start": "2024-01-01T00:00Z", "end": "2026-01-31T00:00Z"}, "start"),
        ({"start": "2026-02-05T00:00Z", "end": "2026-02-06T00:00Z"}, "start"),
        ({"range": "1h", "start": "2026-01-31T10:00Z"}, "range"),
    ],
)
def test_invalid_ranges_name_the_parameter(params, field):
    with pytest.raises(TimeRangeError) as caught:
        parse_timerange(params, now=NOW)
    assert field in caught.value.errors and caught.value.errors[field]


def test_a_line_breaks_where_the_data_has_a_hole_instead_of_crossing_it():
    # One value a minute, then nothing for an hour, then one a minute again.
    before = [(T0 + timedelta(minutes=i), 1.0) for i in range(5)]
    after = [(T0 + timedelta(minutes=65 + i), 2.0) for i in range(5)]
    for figure in (
        charts.timeseries({"busy": before + after}, title="t"),
        charts.utilization_area({"training": before + after}, title="t"),
        charts.utilization_area({}, lines={"healthy": before + after}, title="t"),
    ):
        trace = figure["data"][0]
        assert trace["connectgaps"] is False
        assert trace["y"].count(None) == 1
        hole = trace["y"].index(None)
        assert trace["y"][:hole] == [1.0] * 5 and trace["y"][hole + 1 :] == [2.0] * 5
        # The break sits inside the hole, one step after the last value before it.
        assert trace["x"][hole] == (T0 + timedelta(minutes=5)).isoformat()


def test_a_regular_or_jittered_series_gets_no_breaks():
    jitter = [0, 11, 19, 31, 40, 52, 60]  # raw ten-second samples, give or take
    points = [(T0 + timedelta(seconds=s), 1.0) for s in jitter]
    trace = charts.timeseries({"busy": points}, title="t")["data"][0]
    assert None not in trace["y"] and len(trace["x"]) == len(jitter)


def test_a_missing_rollup_bucket_breaks_the_line():
    stamps = [0, 1, 2, 4, 5, 6]  # the 3-minute bucket is missing
    points = [(T0 + timedelta(minutes=m), 0.5) for m in stamps]
    trace = charts.timeseries({"busy": points}, title="t")["data"][0]
    assert trace["y"] == [0.5, 0.5, 0.5, None, 0.5, 0.5, 0.5]


def test_report_lines_break_at_holes_too():
    from cost import charts as cost_charts

    xs = [T0 + timedelta(minutes=m) for m in (0, 1, 2, 30, 31, 32)]
    trace = cost_charts.lines("t", {"a": (xs, [1, 1, 1, 2, 2, 2])}, "y")["data"][0]
    assert trace["connectgaps"] is False and trace["y"] == [1, 1, 1, None, 2, 2, 2]
