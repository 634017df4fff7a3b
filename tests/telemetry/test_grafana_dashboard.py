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
    assert dashboard["templating"]["list"][0]["query"]["query"].startswith("label_values(portal_")
