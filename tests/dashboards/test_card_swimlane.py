"""The accelerator page shows who holds the card now and its last 24 hours as a swimlane
(issue 32 item 2): the holder now by the precedence rule (scheduler, then exporter labels),
the figure in a json_script element drawn by static/js/swimlane.js (no inline script), one
lane per source, and the index-join assumption said on the page."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from telemetry.ingest.attribution import Holder, Observation, attribution_record
from tests.scheduling.holdings import job, site, store

pytestmark = pytest.mark.django_db


def _figure(html: str) -> dict:
    found = re.search(
        r'<script id="card-holders-figure" type="application/json">(.*?)</script>', html, re.S
    )
    assert found, "no json_script element for the swimlane"
    return json.loads(found.group(1))


def test_the_card_page_names_the_schedulers_job_and_draws_both_lanes(client_as, tenants):
    s = site(tenants)
    now = timezone.now()
    entity = s.entities[("gpu-001", 1)]
    attribution_record(
        cluster_id=s.cluster.pk,
        observations=[
            Observation(entity.pk, (now - timedelta(hours=3, minutes=m)).timestamp(),
                        Holder(namespace="infer", pod="vllm-0", host="gpu-001"))
            for m in (0, 1, 2)
        ],
    )  # fmt: skip
    store(s.source, [job(41, cards={"gpu-001": [1]}, start=now - timedelta(hours=2))], now)
    response = client_as("operator").get(
        f"/dashboards/hardware/accelerators/{s.cards[('gpu-001', 1)].pk}/"
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Held now by job 41 (Acme Robotics), as the scheduler allocated it" in html
    assert 'data-swimlane="card-holders-figure"' in html and "js/swimlane.js" in html
    assert "data-index-assumption" in html and "(1)" in html
    figure = _figure(html)
    bars = {
        (t["name"], y, text)
        for t in figure["data"]
        for y, text in zip(t["y"], t["text"], strict=True)
    }
    assert bars == {
        ("Acme Robotics", "scheduler", "41"),
        ("tenant not known", "exporter labels", "infer/vllm-0"),
    }
    acme = next(t for t in figure["data"] if t["name"] == "Acme Robotics")
    assert acme["x"][0] == pytest.approx(2 * 3600 * 1000, abs=60_000)  # two hours, in ms
    assert figure["layout"]["xaxis"]["type"] == "date"
    # CSP: the page's scripts are files; the only <script> with a body is the JSON data.
    bodies = re.findall(r"<script(?![^>]*\bsrc=)([^>]*)>(.*?)</script>", html, re.S)
    assert all('type="application/json"' in attrs for attrs, body in bodies if body.strip())


def test_a_card_nobody_held_says_so_and_draws_nothing(client_as, tenants):
    s = site(tenants)
    html = (
        client_as("operator")
        .get(f"/dashboards/hardware/accelerators/{s.cards[('gpu-002', 0)].pk}/")
        .content.decode()
    )
    assert "Nobody holds this card now" in html
    assert "data-holders-empty" in html and "card-holders-figure" not in html


def test_an_ended_job_is_in_the_swimlane_but_not_the_holder_now(client_as, tenants):
    s = site(tenants)
    now = timezone.now()
    start, end = now - timedelta(hours=5), now - timedelta(hours=1)
    store(
        s.source,
        [job(12, account="tenant-b", cards={"gpu-002": [3]}, start=start)],
        start + timedelta(minutes=1),
    )
    store(s.source, [job(12, account="tenant-b", state="COMPLETED", cards={"gpu-002": [3]},
                         start=start, end=end)], now)  # fmt: skip
    html = (
        client_as("operator")
        .get(f"/dashboards/hardware/accelerators/{s.cards[('gpu-002', 3)].pk}/")
        .content.decode()
    )
    assert "Nobody holds this card now" in html
    (trace,) = _figure(html)["data"]
    assert trace["name"] == "Panda Speech Cloud" and trace["text"] == ["12"]
    assert trace["x"][0] == pytest.approx(4 * 3600 * 1000, abs=1000)
