"""Dashboard payloads people can read: units on axes and cells, natural rack order, and a
long range on a young cluster saying where its data begins."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dashboards import charts
from dashboards.payloads.common import mark_data_start, table
from inventory.models import Rack
from tests.dashboards.dashboards_fixtures import twin_cluster  # noqa: F401

END = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _figure(first: datetime) -> dict:
    points = [(first + timedelta(minutes=i), 1.0) for i in range(40)]
    return charts.timeseries({"busy": points}, title="Utilization", y_unit="ratio")


def test_a_thirty_day_range_on_a_forty_minute_old_cluster_says_no_data_before() -> None:
    start = END - timedelta(days=30)
    payload = mark_data_start({"figures": {"u": _figure(END - timedelta(minutes=40))}}, start, END)
    assert "No data before 2026-11-30 11:20" in payload["data_start"]["note"]
    layout = payload["figures"]["u"]["layout"]
    assert layout["xaxis"]["range"] == [start.isoformat(), END.isoformat()]
    assert layout["shapes"][0]["x1"] == (END - timedelta(minutes=40)).isoformat()


def test_a_range_the_data_fills_gets_no_marker() -> None:
    payload = mark_data_start(
        {"figures": {"u": _figure(END - timedelta(minutes=40))}},
        END - timedelta(hours=1) + timedelta(minutes=21),
        END,
    )
    assert "data_start" not in payload
    assert "range" not in payload["figures"]["u"]["layout"]["xaxis"]


def test_latency_and_bandwidth_axes_carry_their_units() -> None:
    latency = charts.timeseries({"p99": []}, title="t", y_unit="seconds")["layout"]["yaxis"]
    assert latency["tickformat"] == "~s" and latency["ticksuffix"] == "s"
    offload = charts.timeseries({"kv": []}, title="t", y_unit="bytes_per_second")["layout"]
    assert offload["yaxis"]["ticksuffix"] == "B/s"


def test_table_columns_declare_their_unit_for_the_page() -> None:
    links = table(["link", "utilization_ratio", "capacity_bytes_per_s"], ["l", "u", "c"], [])
    assert links["units"] == ["", "ratio", "bytes_per_second"]


@pytest.mark.django_db
def test_young_cluster_thirty_day_overview_carries_a_no_data_before_marker(
    client_as,
    twin_cluster,  # noqa: F811
):
    data = client_as("operator").get("/api/v1/dashboards/overview/?range=30d").json()
    assert data["data_start"]["note"].startswith("No data before")
    xaxis = data["figures"]["utilization"]["layout"]["xaxis"]
    assert xaxis["range"][0] == data["range"]["start"]


@pytest.mark.django_db
def test_hardware_racks_table_is_in_natural_order(client_as, twin_cluster):  # noqa: F811
    # Swap two names so the database's primary-key order is no longer the natural one.
    r2 = Rack.objects.get(supernode__cluster=twin_cluster, name__endswith="/r2")
    r10 = Rack.objects.get(supernode__cluster=twin_cluster, name__endswith="/r10")
    r2_name, r10_name = r2.name, r10.name
    Rack.objects.filter(pk=r2.pk).update(name="tmp")
    Rack.objects.filter(pk=r10.pk).update(name=r2_name)
    Rack.objects.filter(pk=r2.pk).update(name=r10_name)
    data = client_as("operator").get("/api/v1/dashboards/hardware/").json()
    names = [row[1] for row in data["tables"]["racks"]["rows"]]
    numbers = [int(n.lstrip("r")) for n in names]
    assert numbers == sorted(numbers) and names.index("r2") < names.index("r10")
    assert data["figures"]["utilization"]["data"][0]["x"] == names


def test_simulated_nights_become_shaded_bands_and_hovers_name_the_simulated_clock() -> None:
    from dashboards.payloads.simclock import add_simulated_clock, clock_text, night_bands

    t = [END + timedelta(minutes=i) for i in range(6)]
    hours = list(zip(t, [21.5, 22.0, 23.0, 5.5, 6.0, 7.0], strict=True))
    night = list(zip(t, [0, 1, 1, 1, 0, 0], strict=True))
    assert night_bands(night) == [(t[1], t[4])]
    assert clock_text(23.5) == "23:30" and clock_text(24.0) == "00:00"
    figures = {"u": charts.timeseries({"busy": [(ts, 0.5) for ts in t]}, title="u")}
    assert add_simulated_clock(figures, hours, night)
    trace = figures["u"]["data"][0]
    assert trace["customdata"][2] == "23:00" and "simulated" in trace["hovertemplate"]
    shape = figures["u"]["layout"]["shapes"][0]
    assert (shape["x0"], shape["x1"]) == (t[1].isoformat(), t[4].isoformat())


@pytest.mark.django_db
def test_twin_overview_carries_the_simulated_clock(client_as, twin_cluster):  # noqa: F811
    data = client_as("operator").get("/api/v1/dashboards/overview/?range=1h").json()
    assert data["simulated_clock"] is True
    tiles = {k["key"]: k for k in data["kpis"]}
    assert ":" in tiles["simulated_clock"]["display"]
    assert all("customdata" in t for t in data["figures"]["utilization"]["data"])


def test_twin_offload_rate_is_per_simulated_second_not_per_wall_second() -> None:
    from dashboards.selectors.memory import offload_rate

    # Ten steps stamped 1 s apart in wall time, each 60 simulated seconds; 6 MB per step.
    t = [END + timedelta(seconds=i) for i in range(11)]
    counter = list(zip(t, [i * 6e6 for i in range(11)], strict=True))
    clock = list(zip(t, [i * 60.0 for i in range(11)], strict=True))
    rates = offload_rate(counter, clock)
    assert rates and all(v == pytest.approx(1e5) for _ts, v in rates)  # 100 kB/s, not 6 MB/s
    assert offload_rate(counter)[0][1] == pytest.approx(6e6)  # exporters: per wall second
