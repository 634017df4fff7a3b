"""Network page data: fabric links by status and utilization, failures, self-healing, and
the communication share of training step time."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from cluster_portal.web.rows import plain_rows
from cluster_portal.web.timerange import TimeRange
from dashboards.selectors.common import finite, latest_snapshot, metric_defs
from dashboards.selectors.overview import workload_entity_ids
from inventory.models import Cluster, Link
from telemetry.read import Points, cluster_entity, kind_series, kind_series_many, series_points

LINK_METRICS = ("link_status", "link_utilization_ratio", "link_rerouting_status")
UTILIZATION_BINS = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0001)
TABLE_LIMIT = 50
TOP_N = 20


@dataclass
class LinkRow:
    key: str
    kind: str
    status: str  # "up", "down", "rerouting" (telemetry) or the inventory status
    utilization: float | None
    capacity_bytes_per_s: float
    rack_id: int | None = None


@dataclass
class NetworkData:
    cluster: Cluster
    status_counts: dict[str, int] = field(default_factory=dict)
    utilization_histogram: list[tuple[str, int]] = field(default_factory=list)
    links: list[LinkRow] = field(default_factory=list)  # down/rerouting first, then busiest
    busiest: list[LinkRow] = field(default_factory=list)  # highest newest utilization first
    unhealthy: list[LinkRow] = field(default_factory=list)  # down, rerouting, degraded
    unhealthy_total: int = 0
    # How many different utilization values the links report (the twin models load per rack,
    # so a rack's uplinks share one value; the page says so rather than hide it).
    utilization_distinct: int = 0
    links_total: int = 0
    communication_ratio: float | None = None
    link_failures_in_range: float | None = None
    rerouting_link_seconds: float | None = None
    series: dict[str, Points] = field(default_factory=dict)


def link_seconds(points: Points) -> float:
    """Integral of a "links in state X" curve over time, in link-seconds."""
    total = 0.0
    for (t0, v0), (t1, _) in zip(points, points[1:], strict=False):
        total += v0 * (t1 - t0).total_seconds()
    return total


def network(cluster: Cluster, tr: TimeRange) -> NetworkData:
    """Queries: link snapshot (2 + 3), one for the inventory links with their entities,
    a few series reads (cluster scalars and whole-layout link/workload frames)."""
    data = NetworkData(cluster=cluster)
    snap = latest_snapshot(cluster.pk, "link", LINK_METRICS)
    # Every link with its telemetry entity, as plain rows in one query (a 10,240-card fabric
    # has ~3,400 links; building model instances, then Python rows, was most of this page).
    links = plain_rows(
        Link.objects.filter(cluster=cluster)
        .order_by()
        .values_list(
            "entity__pk", "key", "kind", "status", "capacity_bytes_per_s", "entity__rack_id"
        )
    )
    data.links_total = len(links)
    entity_ids = np.array([row[0] if row[0] is not None else -1 for row in links], np.int64)
    # Each link's position in the snapshot (-1: no telemetry, the inventory's status holds).
    at = snap.positions(entity_ids)
    measured = at >= 0

    def per_link(values: np.ndarray) -> np.ndarray:
        out = np.full(at.size, np.nan)
        out[measured] = values[at[measured]]
        return out

    status, util, rerouting = (snap.get(n) for n in LINK_METRICS)
    link_status, link_util, link_rerouting = per_link(status), per_link(util), per_link(rerouting)
    states = np.array([row[3] for row in links], dtype=object)
    states[link_status == 1] = "up"
    states[link_status == 0] = "down"
    states[link_rerouting == 1] = "rerouting"
    data.status_counts = dict(Counter(states.tolist()))
    present = util[~np.isnan(util)]
    hist, _ = np.histogram(present, bins=UTILIZATION_BINS)
    labels = ("0–25%", "25–50%", "50–75%", "75–90%", "90–100%")
    data.utilization_histogram = list(zip(labels, (int(h) for h in hist), strict=True))
    # Down first, then rerouting, degraded, up; busiest first within a state; then by key.
    rank = {"down": 0, "rerouting": 1, "degraded": 2, "up": 3}
    state_rank = np.array([rank.get(state, 4) for state in states.tolist()], np.int64)
    keys = np.array([row[1] for row in links], dtype=str)
    busy = np.where(np.isnan(link_util), 0.0, link_util)
    top = np.lexsort((keys, -busy, state_rank))[:TABLE_LIMIT]

    def link_row(i: int) -> LinkRow:
        util_i = None if np.isnan(link_util[i]) else float(link_util[i])
        return LinkRow(links[i][1], links[i][2], states[i], util_i, links[i][4], links[i][5])

    data.links = [link_row(int(i)) for i in top]
    # Top-N lists: ties in utilization keep the key order, so a refresh does not reshuffle.
    measured_util = np.flatnonzero(~np.isnan(link_util))
    by_load = measured_util[np.lexsort((keys[measured_util], -link_util[measured_util]))]
    data.busiest = [link_row(int(i)) for i in by_load[:TOP_N]]
    sick = np.flatnonzero(state_rank < rank["up"])
    sick = sick[np.lexsort((keys[sick], -busy[sick], state_rank[sick]))]
    data.unhealthy_total = int(sick.size)
    data.unhealthy = [link_row(int(i)) for i in sick[:TOP_N]]
    data.utilization_distinct = int(np.unique(np.round(link_util[measured_util], 6)).size)

    # The link curves are looked up by kind_series_many; these two are read one by one.
    metrics = metric_defs(("cluster_link_failures_total", "training_communication_ratio"))
    entity = cluster_entity(cluster)
    failures = series_points(metrics.get("cluster_link_failures_total"), entity, tr)
    if failures:
        data.link_failures_in_range = max(0.0, failures[-1][1] - failures[0][1])
    data.series["cluster_link_failures_total"] = failures
    # The three link curves in one grouped read (one fold per tier for all of them).
    curves = kind_series_many(
        cluster_id=cluster.pk,
        kind="link",
        metrics={
            "link_rerouting_status": "sum",
            "link_status": "sum",
            "link_utilization_ratio": "mean",
        },
        tr=tr,
    )
    data.series["links_rerouting"] = curves["link_rerouting_status"]
    up = curves["link_status"]
    data.series["links_down"] = [(ts, max(0.0, len(snap.ids) - v)) for ts, v in up]
    data.series["link_utilization_mean"] = curves["link_utilization_ratio"]
    if data.series["links_rerouting"]:
        data.rerouting_link_seconds = link_seconds(data.series["links_rerouting"])
    training = workload_entity_ids(cluster).get("training", set())
    data.series["training_communication_ratio"] = (
        kind_series(
            cluster_id=cluster.pk,
            kind="workload",
            metric=metrics.get("training_communication_ratio"),
            tr=tr,
            # Only training workloads report it (NaN for services), so the whole kind's
            # stored mean is the training mean, without reading every workload's array.
            reduce="mean",
        )
        if training
        else []
    )
    jobs = latest_snapshot(cluster.pk, "workload", ("training_communication_ratio",))
    comm = jobs.get("training_communication_ratio")[np.isin(jobs.ids, list(training))]
    data.communication_ratio = finite(np.nanmean(comm)) if np.isfinite(comm).any() else None
    return data
