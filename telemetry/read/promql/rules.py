"""Recording rules for the portal's fleet figures, written from the same PromQL the portal asks
(issue 33 §3: "recording rules shipped").

Where a server records them, the portal reads them: its fleet curves, KPIs and rack
heatmaps (``telemetry.read.promql.fleet.fold_recorded``) then ask a few recorded series
instead of aggregating every chip at each page view — at 100,000 chips the query-time
aggregation takes the engine longer than a page may wait — and the page says it reads a
recording rule. Without them (or on a source with a selector or a label map: the rules sum
the whole server under the exporters' own labels) it aggregates at query time
(``fold_aggregated``). The rules serve the dashboards and alerts an SRE keeps beside the
portal too (Grafana panels, vmalert/Alertmanager rules): each card metric
per chip with the ingestion mapping applied (unit factor, dcgm's blank sentinels and
npu-exporter's ``-1`` dropped, NaN/±Inf dropped, dcgm PROF over DEV utilisation, total memory
as FB_USED + FB_FREE), summed and counted over the fleet and per host.

``python manage.py promql_recording_rules --write`` rewrites the shipped file
``deploy/prometheus/cluster-portal-rules.yml``; a test fails when the file and this module
disagree, and ``promtool test rules`` checks the rules' values against the ingestion mapping.
Chips without a chip label (UUID, ``vdie_id``: index-plus-host chips, which the portal folds
one series at a time) are not in the rules. The health point is not recorded: dcgm derives
it from XID/ECC fields through a rule the portal decides per chip (``_dcgm_failing``), which a
recording rule would have to copy.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from telemetry.read.fleet import CARD_METRICS, HEALTH
from telemetry.read.promql.fleet import _Chips, _groups, _metric_expr, record_name
from telemetry.read.promql.hosts import HOST_LABELS
from telemetry.read.promql.translate import selector

RULES_FILE = (
    Path(__file__).resolve().parents[3] / "deploy" / "prometheus" / "cluster-portal-rules.yml"
)
GROUP_NAME = "cluster-portal"
INTERVAL = "30s"
HEADER = (
    "# Recording rules for Cluster Portal's fleet figures: written by\n"
    "# `python manage.py promql_recording_rules --write` from the PromQL the portal asks;\n"
    "# do not edit by hand. Load into Prometheus (`rule_files:`) or VictoriaMetrics\n"
    "# (`vmalert -rule=cluster-portal-rules.yml -datasource.url=… -remoteWrite.url=…`).\n"
)


class _RulesReader:
    """What ``_Chips`` needs of a reader, for a server with the exporters' own label names
    and no selector (a rules file is per server, not per portal cluster)."""

    label_map: dict[str, str] = {}

    def _sel(self, family: str) -> str:
        return selector(family, label_map=self.label_map)


def _per_chip(metric: str, *, keep: tuple[str, ...] = ()) -> str | None:
    """The metric per chip over every exporter family, ``or``-ed (their chip labels differ,
    so the union keeps each exporter's chips)."""
    parts = []
    for prefix, group in (_groups(metric) or {}).items():
        expr = _metric_expr(_Chips(_RulesReader(), prefix, keep=keep), metric, group)
        if expr is None:
            return None
        parts.append(expr)
    return " or ".join(parts) if parts else None


def recording_rules() -> dict:
    """The rules as the YAML document Prometheus and vmalert read."""
    rules = []
    hosts = ", ".join(HOST_LABELS)
    for metric in CARD_METRICS:
        if metric == HEALTH:
            continue
        fleet, by_host = _per_chip(metric), _per_chip(metric, keep=HOST_LABELS)
        if fleet is None or by_host is None:
            continue
        rules += [
            {"record": record_name(metric, "sum"), "expr": f"sum({fleet})"},
            {"record": record_name(metric, "cards"), "expr": f"count({fleet})"},
            {"record": record_name(metric, "sum_by_host"), "expr": f"sum by ({hosts}) ({by_host})"},
            {
                "record": record_name(metric, "cards_by_host"),
                "expr": f"count by ({hosts}) ({by_host})",
            },
        ]
    return {"groups": [{"name": GROUP_NAME, "interval": INTERVAL, "rules": rules}]}


def recording_rules_text() -> str:
    return HEADER + yaml.safe_dump(recording_rules(), sort_keys=False, width=10_000)
