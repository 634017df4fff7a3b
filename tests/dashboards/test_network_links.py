"""The network page's link table: each link's state from its newest telemetry, or from the
inventory when it has none; down first, then rerouting, degraded, up; busiest first."""

# ruff: noqa: F811 (pytest fixtures imported from dashboards_fixtures are used as arguments)

from __future__ import annotations

import numpy as np
import pytest

from cluster_portal.web.timerange import parse_timerange
from dashboards.selectors import network as network_selector
from inventory.models import Link
from telemetry.models import Entity
from telemetry.read import KindSnapshot
from tests.dashboards.dashboards_fixtures import twin_cluster  # noqa: F401


def _snapshot(rows: dict[int, tuple[float, float, float]]) -> KindSnapshot:
    """``{entity id: (status, utilization, rerouting)}`` as the page's link snapshot."""
    ids = np.array(sorted(rows, reverse=True), np.int64)  # deliberately not in id order
    columns = np.array([rows[i] for i in ids.tolist()], np.float64).reshape(len(ids), 3)
    return KindSnapshot(
        ids=ids,
        values={
            "link_status": columns[:, 0],
            "link_utilization_ratio": columns[:, 1],
            "link_rerouting_status": columns[:, 2],
        },
        ts=None,
    )


@pytest.mark.django_db
def test_link_states_come_from_telemetry_then_the_inventory_in_severity_order(
    twin_cluster, monkeypatch
):
    links = list(Link.objects.filter(cluster=twin_cluster).order_by("key"))
    entity_of = dict(Entity.objects.filter(link__in=links).values_list("link_id", "pk"))
    down, rerouting, busy, idle, silent = links[:5]
    Link.objects.filter(pk=silent.pk).update(status="degraded")
    rows = {entity_of[link.pk]: (1.0, 0.1, 0.0) for link in links[5:]}
    rows |= {
        entity_of[down.pk]: (0.0, 0.0, 0.0),
        entity_of[rerouting.pk]: (1.0, 0.2, 1.0),
        entity_of[busy.pk]: (1.0, 0.95, 0.0),
        entity_of[idle.pk]: (1.0, np.nan, 0.0),
        -5: (0.0, 0.5, 0.0),  # an entity with no inventory link: not listed
    }
    monkeypatch.setattr(network_selector, "latest_snapshot", lambda *a: _snapshot(rows))
    data = network_selector.network(twin_cluster, parse_timerange({"range": "1h"}))

    assert data.links_total == len(links)
    assert [(r.key, r.status) for r in data.links[:4]] == [
        (down.key, "down"),
        (rerouting.key, "rerouting"),
        (silent.key, "degraded"),
        (busy.key, "up"),
    ]
    assert data.links[3].utilization == pytest.approx(0.95)
    by_key = {r.key: r for r in data.links}
    assert by_key[silent.key].utilization is None
    assert data.status_counts == {
        "down": 1,
        "rerouting": 1,
        "degraded": 1,
        "up": len(links) - 3,
    }
    # Among equally busy "up" links, keys break the tie.
    tied = [r.key for r in data.links[5:] if r.utilization == pytest.approx(0.1)]
    assert tied == sorted(tied)
