"""The newest card figures per host on a PromQL server, aggregated by the server, and the few
cards a hotspot table shows (issue 33 §3: heatmaps at rack level at 100k cards).

A rack heatmap needs, per rack, the sum and count of each card metric; asked one series per
card, the answer grows with the fleet (102,400 cards × 6 metrics passes the answer cap). Here
the server groups the ingestion mapping written in PromQL (``telemetry.read.promql.fleet``:
unit factors, sentinels, one value per chip) **by host** — one series per node, an eighth of
the cards — and the portal places hosts in racks from its inventory. The hotspots are
``topk`` of the per-chip expression (hottest, busiest) plus the sparse failing chips, whose
values are then read for those chips only. Where the server records the shipped rules with
the portal's placement, the racks are read per rack instead (``rack_rules``: one series per
rack, not per host).

What is approximate, and said where it is shown:
* A chip's host is the first host label it carries of ``HOST_LABELS`` (address labels such as
  ``instance`` are not grouped on: two targets reporting one chip would count it twice); a
  card whose series carry none of them counts under "no host label".
* Ties in ``topk`` are broken by the server, not by the other load figures as the store path
  breaks them.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Iterator
from datetime import UTC, datetime

import numpy as np

from inventory.models import Node
from telemetry.models import Entity, PromQLDataSource
from telemetry.read.fleet import (
    HEALTH,
    SOURCE_PROMQL_RULES,
    TEMPERATURE,
    UTIL,
    CardAgg,
    source_of,
)
from telemetry.read.local.latest import KindSnapshot
from telemetry.read.promql.fleet import (
    _NPU_HEALTH,
    CHIP_LABELS,
    RECORDED_TOP_N,
    Grid,
    _Chips,
    _dcgm_failing,
    _fold_per_card,
    _groups,
    _metric_expr,
    dcgm_failing_recorded,
    fold_aggregated,
    fold_recorded,
    top_record,
)
from telemetry.read.promql.rack_rules import rack_grid, recorded_rack_figures
from telemetry.read.promql.reads import _entity_ids, _Reader
from telemetry.read.promql.translate import chip_label, families, quote, to_mapped
from telemetry.read.promql.translate import entity_key as key_of
from telemetry.read.racks import (
    SOURCE_PROMQL,
    SOURCE_PROMQL_RULES_RACKS,
    RackCardFigures,
    RackFigures,
)

#: Host labels a chip's series are grouped on (as the ingestion chain names hosts, less the
#: address labels).
HOST_LABELS = ("Hostname", "hostname", "node")

# {host (None: no host label): {card metric: CardAgg}}
HostFigures = dict[str | None, dict[str, CardAgg]]


def _host_labels(reader: _Reader) -> tuple[str, ...]:
    return tuple(reader.label_map.get(label, label) for label in HOST_LABELS)


def instant_grid(reader: _Reader, *, at: datetime) -> Grid:
    """Answers at one instant (Prometheus' 5-minute lookback), filed by host."""
    labels = _host_labels(reader)

    def ask(expr: str):
        return reader._run(lambda: reader.client.query(expr, at=at))

    def host(series_labels: dict[str, str], _ts: float) -> Hashable:
        # A plain loop: called once per answered series (12,800 hosts × each figure).
        for name in labels:
            value = series_labels.get(name)
            if value:
                return value
        return None

    return Grid(ask=ask, key=host, sample_key=lambda sample: sample.entity.host)


def host_figures(source: PromQLDataSource, *, names: Iterable[str], at: datetime) -> HostFigures:
    """Each metric's sum, count and count of ones per host at ``at``; health counts a MIG
    GPU once (its slices share its health inputs)."""
    reader = _Reader(source)
    grid, keep = instant_grid(reader, at=at), _host_labels(reader)
    out: HostFigures = {}
    for name in names:
        groups = _groups(name)
        folded = None
        if groups:
            folded = fold_recorded(reader, name, groups, grid, keep=keep)
        if groups and folded is None:
            folded = fold_aggregated(reader, name, groups, grid, keep=keep, mig=name != HEALTH)
        if folded is None:
            folded = _fold_per_card(reader, name, grid)
        for host, agg in folded.items():
            out.setdefault(host, {})[name] = agg
    return out


def _chips_answered(chips: _Chips, answer) -> set[str]:
    return {series.labels[chips.label] for series in answer if series.labels.get(chips.label)}


def hot_chip_ids(source: PromQLDataSource, *, n: int, at: datetime) -> dict[str, set[str]]:
    """``{exporter prefix: chip ids}``: the ``n`` hottest and ``n`` busiest chips of each
    exporter, and every chip whose health is not 1 (sparse: a healthy fleet has none). Where
    the server records the shipped rules, the top chips and the failing ones are read from
    them (``…:<exporter>_top20``, the failing series), not ranked over every chip."""
    reader = _Reader(source)
    grid = instant_grid(reader, at=at)
    rules = not (reader.source.selector or reader.label_map)  # the rules cannot be narrowed
    out: dict[str, set[str]] = {}
    for metric in (TEMPERATURE, UTIL):
        for prefix, group in (_groups(metric) or {}).items():
            chips = _Chips(reader, prefix)
            found: set[str] = set()
            if rules and n <= RECORDED_TOP_N:
                found = _chips_answered(chips, grid.ask(f"topk({n}, {top_record(metric, prefix)})"))
            expr = _metric_expr(chips, metric, group)
            if not found and expr is not None:  # no rules, or a file without the top rule
                found = _chips_answered(chips, grid.ask(f"topk({n}, {expr})"))
            out.setdefault(prefix, set()).update(found)
    for prefix in _groups(HEALTH) or {}:
        chips = _Chips(reader, prefix, mig=False)
        if prefix == "DCGM_":
            failing = _dcgm_failing(chips, grid, recorded=dcgm_failing_recorded(reader, grid))
            sick = {chip for chip_set in failing.values() for chip, _mig in chip_set if chip}
        else:
            sick = _chips_answered(chips, grid.ask(f"({chips.scaled(_NPU_HEALTH)} != 1)"))
        out.setdefault(prefix, set()).update(sick)
    return out


#: The longest chip alternation one query carries: VictoriaMetrics refuses a query longer than
#: ``-search.maxQueryLen`` (16 KiB by default), and a page of 1,000 UUIDs is ~25 kB escaped.
MAX_PATTERN_CHARS = 6_000


def _pattern_chunks(chips: list[str]) -> Iterator[str]:
    """``chips`` as regex alternations of at most :data:`MAX_PATTERN_CHARS` characters."""
    batch: list[str] = []
    size = 0
    for chip in chips:
        escaped = re.escape(chip)
        if batch and size + len(escaped) + 1 > MAX_PATTERN_CHARS:
            yield "|".join(batch)
            batch, size = [], 0
        batch.append(escaped)
        size += len(escaped) + 1
    if batch:
        yield "|".join(batch)


def chips_snapshot(
    source: PromQLDataSource, *, chip_ids: dict[str, set[str]], names: Iterable[str], at: datetime
) -> KindSnapshot:
    """The newest values of ``names`` for the given chips only, through the ingestion
    mapping: one instant query per family, narrowed to the chips by their label."""
    reader = _Reader(source)
    names = list(names)
    results = []
    for name in names:
        for family in families(name):
            prefix = next((p for p in CHIP_LABELS if family.startswith(p)), None)
            wanted = chip_ids.get(prefix or "", set())
            label = chip_label(family, reader.label_map)
            if not wanted or label is None:
                continue
            for chunk in _pattern_chunks(sorted(wanted)):
                expr = reader._sel(family)[:-1] + f",{label}=~{quote(chunk)}}}"
                answer = reader._run(lambda e=expr: reader.client.query(e, at=at))
                results += [(family, s) for s in answer]
    by_key: dict[str, dict[str, float]] = {}
    for sample in to_mapped(results, label_map=reader.label_map):
        if sample.metric in names and sample.entity.kind == "accelerator":
            by_key.setdefault(key_of(sample), {})[sample.metric] = sample.value
    ids = _entity_ids(source.cluster_id, "accelerator", by_key)
    known = sorted(ids.items(), key=lambda item: item[1])
    values = {}
    for name in names:
        array = np.array([by_key[key].get(name, np.nan) for key, _ in known], dtype=np.float64)
        if np.isfinite(array).any():
            values[name] = array
    return KindSnapshot(
        ids=np.array([entity_id for _, entity_id in known], dtype=np.int64),
        values=values,
        ts=at if known else None,
    )


def rack_card_figures(source: PromQLDataSource, *, names: list[str], hot_n: int) -> RackCardFigures:
    """Per-rack sums and counts from the server's per-host answers, hosts placed by the
    inventory; the hotspot candidates are the server's top chips and every failing one."""
    at = datetime.now(tz=UTC)
    reader = _Reader(source)
    grid = rack_grid(reader, at=at, host_labels=_host_labels(reader), cluster_id=source.cluster_id)
    per_rack = recorded_rack_figures(
        reader,
        names=names,
        grid=grid,
        placed_nodes=lambda: Node.objects.filter(
            cluster_id=source.cluster_id, rack__isnull=False
        ).exists(),
    )
    out: RackFigures = {}
    for name, racks in per_rack.items():
        for rack, agg in racks.items():
            out.setdefault(rack, {})[name] = agg
    rest = [name for name in names if name not in per_rack]
    per_host = host_figures(source, names=rest, at=at) if rest else {}
    if per_host:
        rack_of_host = dict(
            Node.objects.filter(cluster_id=source.cluster_id).values_list("hostname", "rack_id")
        )
        for host, metrics in per_host.items():
            rack = rack_of_host.get(host) if host is not None else None
            for name, agg in metrics.items():
                figure = out.setdefault(rack, {}).setdefault(name, CardAgg(recorded=agg.recorded))
                figure.add(agg.cards, agg.total, agg.ones)
    chips = hot_chip_ids(source, n=hot_n, at=at)
    hot = chips_snapshot(source, chip_ids=chips, names=names, at=at)
    aggs = [agg for metrics in out.values() for agg in metrics.values()]
    how = source_of(SOURCE_PROMQL, aggs)
    if per_rack and how == SOURCE_PROMQL_RULES:
        how = SOURCE_PROMQL_RULES_RACKS
    return RackCardFigures(ts=at if out else None, racks=out, hot=hot, source=how)


def cards_latest(
    source: PromQLDataSource, *, entity_ids: Iterable[int], names: list[str]
) -> dict[int, dict[str, float]]:
    """``{entity id: {metric: newest value}}`` for a few cards (a rack's or a node's), asked
    for those chips only by their chip label (cards an exporter names by index and host, with
    no chip label, are not found this way and show no values)."""
    wanted = set(entity_ids)
    vendor_ids = Entity.objects.filter(
        cluster_id=source.cluster_id, pk__in=wanted, accelerator__isnull=False
    ).values_list("accelerator__vendor_id", flat=True)
    # A MIG slice's vendor id is its GPU's UUID and its instance: the chip label is the UUID.
    chips = {vendor.split("/", 1)[0] for vendor in vendor_ids if vendor}
    at = datetime.now(tz=UTC)
    snap = chips_snapshot(source, chip_ids=dict.fromkeys(CHIP_LABELS, chips), names=names, at=at)
    return {pk: values for pk, values in snap.by_entity().items() if pk in wanted}
