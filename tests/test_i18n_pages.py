"""The main pages, rendered in zh-hans on the demo's own data, carry no English words.

One seeded demo (logins, the twin's two clusters with telemetry, the three migration plans
with their gates, analysis runs and audit trail, a finished what-if run) is rendered for an
operator and for a customer; every visible text node and every human-facing attribute
(``title``, ``placeholder``, ``aria-label``, chart labels passed to the scripts) is searched
for words of the portal's own English vocabulary. Identifiers (``tpot-p99``, metric names,
workload names) are single tokens with hyphens or underscores and are not words here.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command

from accounts.models import User
from inventory.models import Accelerator, Cluster, Node, Rack, Workload
from rollout.models import MigrationPlan
from simulation.models import TwinRun, WhatIfRun
from simulation.tasks import run_whatif
from telemetry.catalogue.heartbeats import heartbeat_record

# Words of the portal's English UI that must never reach a zh-hans reader. Units, product
# and model names (TTFT, P99, GB, Ascend, Llama) are shared by both languages and absent.
ENGLISH = {
    "a", "about", "abort", "aborted", "action", "active", "alert", "alerts", "alive",
    "and", "approve", "approved", "approval", "approvals", "audit", "awaiting", "back",
    "broker", "by", "cancel", "card", "cards", "changed", "cluster", "clusters", "cost",
    "created", "customer", "database", "date", "down", "dry", "error", "failed", "for",
    "from", "gate", "gray", "holds", "hours", "idle", "in", "inconclusive", "last", "latest",
    "memory", "migration", "network", "no", "none", "not", "of", "on", "or", "passed",
    "paused", "pending", "phase", "pilot", "plan", "promote", "promoted", "queued",
    "reason", "reject", "rejected", "requested", "retry", "rolled", "running", "since",
    "skip", "started", "state", "status", "step", "succeeded", "successful", "the",
    "to", "today", "traffic", "updated", "utilization", "value", "values", "when", "which",
    "who", "with", "worker", "workers", "workload", "workloads", "yes",
    "analysing", "analysis", "compare", "create", "criterion", "denied", "does", "draft",
    "firing", "hold", "inference", "open", "pooled", "pts", "resolved", "rollback",
    "split", "start", "system", "training", "unified",
}  # fmt: skip
# What people typed (the demo's approval comment and promotion note) is data, not UI.
TYPED_BY_PEOPLE = ("figures within the gate", "analysis passed")
HUMAN_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt"}
# Text the scripts show (empty-chart note, load error) travels in data attributes.
SCRIPT_TEXT_ATTRIBUTES = {"data-empty-text", "data-error-text"}
# A word stands alone: not part of an identifier, path, URL query or column list.
WORD = re.compile(r"(?<![\w\-./@:?=\[,])[A-Za-z]+(?![\w\-./@=\]])")


class VisibleText(HTMLParser):
    """Collects what a reader sees: text outside scripts and styles, human-facing attributes,
    and the strings of JSON label blocks the scripts draw with."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0
        self._json = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in {"script", "style", "code"}:
            # Scripts and styles are not read; <code> holds expressions and commands.
            self._skip += 1
            self._json = tag == "script" and ("type", "application/json") in attrs
        for name, value in attrs:
            if value and (name in HUMAN_ATTRIBUTES or name in SCRIPT_TEXT_ATTRIBUTES):
                self.parts.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in {"script", "style", "code"} and self._skip:
            self._skip -= 1
            self._json = False

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)
        elif self._json:
            self.parts.extend(_label_strings(data))


# Keys under which chart figures and payloads carry text for people (Plotly: titles, trace
# names, hover templates; payloads: KPI labels and hints, table headings, update time).
LABEL_KEYS = {
    "text",
    "title",
    "name",
    "label",
    "labels",
    "hint",
    "hovertemplate",
    "updated_display",
}


def _label_strings(blob: str) -> list[str]:
    """Human labels inside a JSON script block (chart titles, axis titles, legend names)."""
    try:
        data = json.loads(blob)
    except ValueError:
        return []
    found: list[str] = []

    def walk(node, key: str = "") -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and key in LABEL_KEYS:
            found.append(re.sub(r"%\{[^}]*\}|<[^>]+>", " ", node))

    walk(data)
    return found


def payload_english(payload: dict) -> list[str]:
    """English words among a dashboard payload's labels (KPIs, charts, table headings)."""
    hits = []
    for text in _label_strings(json.dumps(payload)):
        hits += [f"{m.group()!r} in …{text[:60]}…" for m in WORD.finditer(text)]
    return [hit for hit in hits if hit.split("'")[1].lower() in ENGLISH]


def english_words(html: str) -> list[str]:
    parser = VisibleText()
    for text in TYPED_BY_PEOPLE:
        html = html.replace(text, "")
    parser.feed(html)
    hits = []
    for part in parser.parts:
        for match in WORD.finditer(part):
            if match.group().lower() in ENGLISH:
                start = max(0, match.start() - 30)
                hits.append(f"{match.group()!r} in …{part[start : match.end() + 30].strip()}…")
    return hits


@pytest.fixture
def demo(db, tmp_path, settings):
    settings.VAR_DIR = tmp_path
    out = StringIO()
    call_command("seed_demo", password="demo-pass-123", stdout=out)
    # The demo's shape (make demo): both clusters the same size, so they run the same jobs
    # and the moved pilots are still running on the target when their gates measure.
    call_command("seed_twin", cards=256, stdout=out)
    call_command("seed_migrations", stdout=out)
    whatif = WhatIfRun.objects.create(
        cards=64,
        hardware="h100-sxm",
        hours=1,
        seed=3,
        created_by=User.objects.get(username="operator"),
    )
    run_whatif.apply(args=[whatif.pk])
    # The report shows an ablation only from a run on its unified cluster's own cards and
    # accelerator (issue 24): the same result, filed as such a run, so its labels are read.
    whatif.refresh_from_db()
    unified = Cluster.objects.select_related("hardware_model").get(name="unified-demo")
    WhatIfRun.objects.create(
        cards=Accelerator.objects.filter(node__cluster=unified).count(),
        hardware=unified.hardware_model.slug,
        hours=whatif.hours,
        seed=whatif.seed,
        status=WhatIfRun.Status.DONE,
        result=whatif.result,
        finished_at=whatif.finished_at,
        created_by=whatif.created_by,
    )
    heartbeat_record(kind="worker", name="celery@demo")
    heartbeat_record(kind="beat", name="beat@demo")
    return whatif


def operator_pages(whatif: WhatIfRun) -> list[str]:
    cluster = Cluster.objects.get(name="unified-demo")
    rack = Rack.objects.filter(supernode__cluster=cluster).first()
    node = Node.objects.filter(cluster=cluster).first()
    card = Accelerator.objects.filter(node__cluster=cluster).first()
    workload = Workload.objects.filter(cluster=cluster).first()
    plans = [f"/migrations/{pk}/" for pk in MigrationPlan.objects.values_list("pk", flat=True)]
    twin = TwinRun.objects.first()
    assert rack and node and card and workload and twin
    return [
        "/",
        "/status/",
        "/dashboards/",
        "/dashboards/hardware/",
        f"/dashboards/hardware/racks/{rack.pk}/",
        f"/dashboards/hardware/nodes/{node.pk}/",
        f"/dashboards/hardware/accelerators/{card.pk}/",
        "/dashboards/memory/",
        "/dashboards/network/",
        "/workloads/",
        f"/workloads/{workload.pk}/",
        "/cost/",
        "/report/",
        "/alerts/",
        "/scheduler/",
        "/exporters/",
        "/migrations/",
        "/migrations/new/",
        "/migrations/audit/",
        "/migrations/webhooks/",
        *plans,
        "/twin/",
        "/whatif/",
        f"/whatif/{whatif.pk}/",
        "/whatif/models/",
    ]


CUSTOMER_PAGES = ["/", "/workloads/", "/cost/", "/migrations/", "/scheduler/"]


def test_main_pages_in_zh_hans_carry_no_english_words(demo, client):
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    found: dict[str, list[str]] = {}
    shown: dict[str, str] = {}
    for username, urls in (
        ("operator", operator_pages(demo)),
        ("approver1", [f"/migrations/{MigrationPlan.objects.get(state='awaiting_approval').pk}/"]),
        ("customer-acme-bank", CUSTOMER_PAGES),
    ):
        client.force_login(User.objects.get(username=username))
        for url in urls:
            response = client.get(url)
            assert response.status_code == 200, (username, url, response.status_code)
            page = response.content.decode()
            assert 'lang="zh-hans"' in page, url
            shown[url] = page
            if hits := english_words(page):
                found[f"{username} {url}"] = hits
            # Dashboards draw from a JSON endpoint: its labels are the page's text too.
            for data_url in re.findall(r'data-url="([^"]+)"', page):
                payload = client.get(data_url, headers={"accept": "application/json"}).json()
                if hits := payload_english(payload):
                    found[f"{username} {data_url}"] = hits
    report = "\n".join(f"{where}:\n  " + "\n  ".join(hits) for where, hits in found.items())
    assert not found, "English words in zh-hans pages:\n" + report
    # And the leftovers are there, in Chinese (not merely absent).
    rolled_back = MigrationPlan.objects.get(state="rolled_back").pk
    expected = {
        "/status/": ["消息代理", "数据库", "工作进程"],
        f"/migrations/{rolled_back}/": ["失败：tpot-p99", "不成立", "个数值", "回滚", "系统"],
        "/migrations/audit/": ["批准", "申请晋级", "分析成功", "运行中 → 待审批"],
        "/report/": ["+池化内存", "个百分点"],
        "/workloads/": ['<label>至 <input type="datetime-local"'],
    }
    for url, fragments in expected.items():
        missing = [text for text in fragments if text not in shown[url]]
        assert not missing, (url, missing)
