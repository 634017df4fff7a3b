"""deploy/grafana/cluster-portal.json is valid JSON and only queries metrics /metrics exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from accounts.services.tokens import token_create

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "cluster-portal.json"


@pytest.mark.django_db
def test_every_panel_expression_names_a_metric_the_portal_exports(db):
    dashboard = json.loads(DASHBOARD.read_text())
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {token_create(name='g', scopes=['read']).plaintext}"
    )
    text = client.get("/metrics").content.decode()
    exported = set()
    for family, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, flags=re.M):
        exported.add(family)
        if kind == "counter":
            exported.add(f"{family}_total")
    assert "portal_remote_write_samples_total" in exported
    expressions = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(expressions) >= 8 and all(p["targets"] for p in dashboard["panels"])
    for expr in expressions:
        names = set(re.findall(r"\bportal_[a-z0-9_]+", expr))
        assert names, f"no portal metric in {expr!r}"
        assert names <= exported, f"{expr!r} names {names - exported} that /metrics lacks"
    cluster = next(v for v in dashboard["templating"]["list"] if v["name"] == "cluster")
    assert cluster["query"]["query"].startswith("label_values(portal_")


GRAFANA_GLOBALS = {"__all", "__interval", "__rate_interval", "__range", "__interval_ms"}


def test_the_dashboard_loads_by_file_provisioning_with_a_datasource_variable():
    # File provisioning does not substitute __inputs (``${DS_PROMETHEUS}`` stayed literal and
    # every panel broke); a datasource template variable works provisioned and imported alike.
    raw = DASHBOARD.read_text()
    dashboard = json.loads(raw)
    assert "__inputs" not in dashboard and "DS_PROMETHEUS" not in raw
    for key in ("title", "uid", "schemaVersion", "panels", "templating"):
        assert key in dashboard, key
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    referenced = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", raw))
    unresolved = referenced - set(variables) - GRAFANA_GLOBALS
    assert not unresolved, f"references no variable defines: {unresolved}"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]
    titles = " ".join(panel["title"] for panel in dashboard["panels"]).lower()
    assert "refusal" in titles and "shed" in titles and "lag" in titles
