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
one series at a time) are not in the rules. Every per-host figure is recorded per rack too,
joined on the server with the portal's node placement (``…_by_rack``,
``telemetry.read.promql.rack_rules``). The health point is recorded in parts: dcgm's
GPUs that report a health input are counted, and the chips its XID/ECC fields may call
failing are recorded as sparse series (chip and host labels kept) whose critical XIDs the
portal still decides itself (``_dcgm_failing``), so at 100,000 chips a page reads a count and
the few failing chips instead of scanning every chip's health fields.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from telemetry.read.fleet import CARD_METRICS, HEALTH, TEMPERATURE, UTIL
from telemetry.read.promql.fleet import (
    FAILING_RECORDS,
    ONE,
    RECORDED_TOP_N,
    _Chips,
    _dcgm_failing_exprs,
    _dcgm_present_expr,
    _groups,
    _metric_expr,
    _tag,
    dcgm_cards_record,
    record_name,
    top_record,
)
from telemetry.read.promql.hosts import HOST_LABELS
from telemetry.read.promql.rack_rules import BY_RACK, by_rack
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
        summed, counted = f"sum by ({hosts}) ({by_host})", f"count by ({hosts}) ({by_host})"
        rules += [
            {"record": record_name(metric, "sum"), "expr": f"sum({fleet})"},
            {"record": record_name(metric, "cards"), "expr": f"count({fleet})"},
            {"record": record_name(metric, "sum_by_host"), "expr": summed},
            {"record": record_name(metric, "cards_by_host"), "expr": counted},
            {"record": record_name(metric, "sum" + BY_RACK), "expr": by_rack(summed, HOST_LABELS)},
            {
                "record": record_name(metric, "cards" + BY_RACK),
                "expr": by_rack(counted, HOST_LABELS),
            },
        ]
    rules += _health_rules()
    # The hotspot tables' candidates: the top chips per exporter, labels kept.
    for metric in (TEMPERATURE, UTIL):
        for prefix, group in (_groups(metric) or {}).items():
            per_chip = _metric_expr(_Chips(_RulesReader(), prefix), metric, group)
            if per_chip is not None:
                rules.append(
                    {
                        "record": top_record(metric, prefix),
                        "expr": f"topk({RECORDED_TOP_N}, {per_chip})",
                    }
                )
    return {"groups": [{"name": GROUP_NAME, "interval": INTERVAL, "rules": rules}]}


def _health_rules() -> list[dict]:
    """The health point's rules. dcgm: the GPUs reporting any health input, counted over the
    fleet (MIG slices apart, as the fleet figures count them) and per host (a MIG GPU once),
    and the three sparse answers that name failing chips with their chip and host labels
    kept (the portal decides which XIDs are critical, as live). Other exporters: their health
    value per chip summed, counted, and counted where it is 1."""
    rules: list[dict] = []
    hosts = ", ".join(HOST_LABELS)
    for prefix, group in (_groups(HEALTH) or {}).items():
        if prefix == "DCGM_":
            fleet = _Chips(_RulesReader(), prefix)
            per_host = _Chips(_RulesReader(), prefix, keep=HOST_LABELS, mig=False)
            labelled = _Chips(_RulesReader(), prefix, keep=HOST_LABELS)
            xid, counted, fields = _dcgm_failing_exprs(labelled)
            present = _dcgm_present_expr(per_host)
            rules += [
                {"record": dcgm_cards_record(), "expr": _dcgm_present_expr(fleet)},
                {"record": dcgm_cards_record("_by_host"), "expr": present},
                {"record": dcgm_cards_record(BY_RACK), "expr": by_rack(present, HOST_LABELS)},
                # One XID family: its series are recorded as they are (the value is the code).
                {"record": record_name(HEALTH, FAILING_RECORDS[0]), "expr": xid},
                {
                    "record": record_name(HEALTH, FAILING_RECORDS[1]),
                    "expr": f"max by ({labelled.by}) ({counted})",
                },
                {
                    "record": record_name(HEALTH, FAILING_RECORDS[2]),
                    "expr": f"max by ({labelled.by}) ({fields})",
                },
            ]
            continue
        tag = _tag(prefix)
        for suffix, keep, by in (("", (), ""), ("_by_host", HOST_LABELS, f" by ({hosts})")):
            per_chip = _metric_expr(_Chips(_RulesReader(), prefix, keep=keep), HEALTH, group)
            if per_chip is None:
                continue
            parts = {
                "sum": f"sum{by}({per_chip})",
                "cards": f"count{by}({per_chip})",
                "ones": f"count{by}({per_chip} >= {ONE!r})",
            }
            for aggregate, expr in parts.items():
                rules.append(
                    {"record": record_name(HEALTH, f"{tag}{aggregate}{suffix}"), "expr": expr}
                )
            if keep:  # and per rack of the portal's placement
                rules += [
                    {
                        "record": record_name(HEALTH, f"{tag}{aggregate}{BY_RACK}"),
                        "expr": by_rack(expr, HOST_LABELS),
                    }
                    for aggregate, expr in parts.items()
                ]
    return rules


def recording_rules_text() -> str:
    return HEADER + yaml.safe_dump(recording_rules(), sort_keys=False, width=10_000)
