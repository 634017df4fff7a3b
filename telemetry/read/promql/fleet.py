"""Per-bucket aggregates of card series on a PromQL server, for derived fleet figures
(``telemetry.read.fleet``).

**Aggregated in the query** wherever the ingestion mapping is linear (utilisation, power,
temperature, memory used and total): the server sums and counts the cards itself, one range
query per metric and exporter family group, and answers three series (``total``, ``cards``,
``ones``) whatever the fleet's size. The query applies the mapping exactly as the ingestion
path does — the unit factor, dcgm's blank sentinels and npu-exporter's -1 dropped, NaN and
±Inf dropped, dcgm's PROF utilisation preferred over DEV for the same GPU, dcgm's total
memory as FB_USED + FB_FREE of the same GPU — and counts one value per chip (its UUID or
``vdie_id``, and MIG instance): if two targets report one chip, the larger value counts.

Series without the chip label (index-plus-host chips) are still fetched one series per card
and folded here after the ingestion mapping. dcgm's health point is counted by the server
(GPUs reporting any health input) less the chips its sparse failing answers name, whose
critical XIDs are decided here. Where the server records the shipped rules
(``telemetry.read.promql.rules``) every one of these figures, health included, is read from
the recorded series instead (:func:`fold_recorded`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import datetime

from telemetry.families.exposition import MappedSample
from telemetry.families.mapping import DCGM_BLANK_SENTINEL
from telemetry.families.mapping_pass import FB_FREE, FB_USED, MIB
from telemetry.families.mapping_rules import RULES
from telemetry.families.nvidia import (
    CRITICAL_XIDS,
    DEV_UTIL,
    FAILURE_FIELDS,
    HEALTH_INPUTS,
    PROF_UTIL,
    XID_COUNT,
    XID_LAST,
)
from telemetry.models import PromQLDataSource
from telemetry.read.fleet import HBM_TOTAL, HEALTH, CardAgg, CardBuckets
from telemetry.read.promql.client import ResultSeries
from telemetry.read.promql.reads import MIN_STEP_SECONDS, TARGET_POINTS, _Reader
from telemetry.read.promql.translate import CHIP_LABELS, families, to_mapped
from telemetry.read.steps import HOUR_SECONDS, hour_dividing_step

#: A health value counts as "one" (healthy) from here, as in the store's fold.
ONE = 0.999999
_NPU_HEALTH = "npu_chip_info_health_status"  # the one npu family where -1 is a real value


def _vendor(family: str) -> str | None:
    return next((prefix for prefix in CHIP_LABELS if family.startswith(prefix)), None)


class _Chips:
    """PromQL for one exporter's chips on one source: selectors, the ``by`` labels, and each
    family's mapped per-chip expression. ``keep`` names labels kept beside the chip's (the
    host labels, for per-host figures); ``mig=False`` counts a MIG GPU once, not per slice."""

    def __init__(
        self, reader: _Reader, prefix: str, *, keep: tuple[str, ...] = (), mig: bool = True
    ) -> None:
        label, has_mig = CHIP_LABELS[prefix]
        label_map = reader.label_map
        self.reader, self.prefix = reader, prefix
        self.label = label_map.get(label, label)
        self.mig_label = label_map.get("GPU_I_ID", "GPU_I_ID") if has_mig and mig else None
        self.keep = ", ".join(keep)
        self.by = ", ".join(
            [self.label] + ([self.mig_label] if self.mig_label else []) + list(keep)
        )

    def selector(self, family: str, *, has_chip_label: bool) -> str:
        sel = self.reader._sel(family)
        return sel[:-1] + f',{self.label}{"!=" if has_chip_label else "="}""}}'

    def chip(self, family: str) -> str:
        """``family`` per chip in catalogue units, dropped values left out."""
        kept = f"(({self.selector(family, has_chip_label=True)} > -Inf) < +Inf)"
        if self.prefix == "DCGM_":
            kept = f"({kept} < {float(DCGM_BLANK_SENTINEL)!r})"
        elif family != _NPU_HEALTH:
            kept = f"({kept} != -1)"
        return f"max by ({self.by}) ({kept})"

    def scaled(self, family: str) -> str:
        rule = RULES[family]
        expr = self.chip(family)
        if rule.factor != 1:
            expr = f"({expr} * {rule.factor!r})"
        if rule.divisor != 1:
            expr = f"({expr} / {rule.divisor!r})"
        return expr

    def identity(self, labels: dict[str, str]) -> tuple:
        """The chip a failing series names, as :meth:`chip` groups it."""
        return (labels.get(self.label), labels.get(self.mig_label) if self.mig_label else None)


@dataclass
class Grid:
    """Where an aggregate is asked and how its points are filed: over a range of buckets
    (the fleet's curves, keyed by bucket start) or at one instant per host (the racks, keyed
    by the host the labels name). ``ask`` runs one expression; ``key`` files a point by its
    series' labels and timestamp; ``sample_key`` files a mapped sample of the per-card fold."""

    ask: Callable[[str], list[ResultSeries]]
    key: Callable[[dict[str, str], float], Hashable]
    sample_key: Callable[[MappedSample], Hashable]


def range_grid(reader: _Reader, *, start: datetime, end: datetime, step: int) -> Grid:
    def ask(expr: str) -> list[ResultSeries]:
        return reader._run(lambda: reader.client.query_range(expr, start=start, end=end, step=step))

    return Grid(
        ask=ask,
        key=lambda _labels, ts: int(ts // step * step),
        sample_key=lambda sample: int(sample.timestamp // step * step),
    )


#: How many top chips per metric and exporter the rules record (the hotspot tables show 20).
RECORDED_TOP_N = 20
#: The sparse recorded answers that name dcgm's failing chips (``cluster_portal:
#: accelerator_health_status:<name>``), in :func:`_dcgm_failing_exprs`' order.
FAILING_RECORDS = ("dcgm_xid_last_nonzero", "dcgm_xid_critical_counted", "dcgm_failure_fields")


def _dcgm_failing_exprs(chips: _Chips) -> tuple[str, str, str]:
    """The three sparse answers that name failing chips: the last XID where it is not 0
    (decided critical or not by the caller), the critical-XID counters above 0, and the
    failure fields above 0."""
    sentinel = f"{float(DCGM_BLANK_SENTINEL)!r}"
    xid = chips.selector(XID_LAST, has_chip_label=True)
    counted = chips.selector(XID_COUNT, has_chip_label=True)[:-1]
    counted += f',xid=~"{"|".join(str(code) for code in sorted(CRITICAL_XIDS))}"}}'
    fields = chips.selector("|".join(sorted(FAILURE_FIELDS)), has_chip_label=True)
    return (
        f"(({xid} != 0) < {sentinel})",
        f"(({counted} > 0) < {sentinel})",
        f"(({fields} > 0) < {sentinel})",
    )


def _dcgm_failing(
    chips: _Chips, grid: Grid, *, recorded: bool = False
) -> dict[Hashable, set[tuple]]:
    """The chips dcgm's health inputs say fail, per key: the (sparse) series whose last XID
    is a critical one, whose critical-XID counter or failure field is above 0, decided here
    as ``nvidia.health_failing`` decides them — one PromQL comparison per critical XID costs
    the server seconds at 10,000 cards. ``recorded``: the same three answers from the
    shipped recording rules (:data:`FAILING_RECORDS`), which keep the chip and host labels."""
    if recorded:
        xid, counted, fields = (record_name(HEALTH, name) for name in FAILING_RECORDS)
    else:
        xid, counted, fields = _dcgm_failing_exprs(chips)
    failing: dict[Hashable, set[tuple]] = {}
    for series in grid.ask(xid):
        for ts, value in series.points:
            if int(value) in CRITICAL_XIDS:
                key = grid.key(series.labels, ts)
                failing.setdefault(key, set()).add(chips.identity(series.labels))
    for expr in (counted, fields):
        for series in grid.ask(expr):
            for ts, _value in series.points:
                key = grid.key(series.labels, ts)
                failing.setdefault(key, set()).add(chips.identity(series.labels))
    return failing


def _dcgm_present_expr(chips: _Chips) -> str:
    """How many GPUs report any health input (per ``keep`` labels where given)."""
    sentinel = f"{float(DCGM_BLANK_SENTINEL)!r}"
    inputs = chips.selector("|".join(sorted(HEALTH_INPUTS)), has_chip_label=True)
    grouped = f"group by ({chips.by}) ((({inputs} > -Inf) < +Inf) < {sentinel})"
    return f"count by ({chips.keep}) ({grouped})" if chips.keep else f"count({grouped})"


def _dcgm_health(
    chips: _Chips, grid: Grid, *, present: str | None = None, recorded: bool = False
) -> dict[Hashable, CardAgg]:
    """dcgm's derived health point per key: a GPU that reports any health input is a card
    (the server counts them: ``present``, a recorded count where given), healthy unless
    :func:`_dcgm_failing` names it."""
    out: dict[Hashable, CardAgg] = {}
    for series in grid.ask(present or _dcgm_present_expr(chips)):
        for ts, value in series.points:
            out[grid.key(series.labels, ts)] = CardAgg(int(value), 0.0, 0, recorded)
    failing = _dcgm_failing(chips, grid, recorded=recorded)
    for key, agg in out.items():
        agg.ones = max(0, agg.cards - len(failing.get(key, ())))
        agg.total = float(agg.ones)
    return out


def _metric_expr(chips: _Chips, metric: str, group: list[str]) -> str | None:
    """The metric per chip for one exporter's families, or ``None`` where the ingestion
    mapping is not a linear rule of one family."""
    if metric == HBM_TOTAL and chips.prefix == "DCGM_":
        used = chips.chip(FB_USED)
        free = chips.chip(FB_FREE)
        return f"(({used} + on({chips.by}) {free}) * {float(MIB)!r})"
    if any(family not in RULES or RULES[family].counter for family in group):
        return None
    if set(group) == {PROF_UTIL, DEV_UTIL}:
        # The PROF field is the figure where a GPU reports both (mapping_pass).
        return f"({chips.scaled(PROF_UTIL)} or on({chips.by}) {chips.scaled(DEV_UTIL)})"
    if len(group) != 1:
        return None
    return chips.scaled(group[0])


def _summary_query(per_chip: str, keep: str = "") -> str:
    """Three series tagged ``agg``: the sum, the count, and the count of ones (per ``keep``
    labels where given)."""
    by = f" by ({keep})" if keep else ""
    parts = [
        ("total", f"sum{by}({per_chip})"),
        ("cards", f"count{by}({per_chip})"),
        ("ones", f"count{by}({per_chip} >= {ONE!r})"),
    ]
    return " or ".join(f'label_replace({expr}, "agg", "{tag}", "", "")' for tag, expr in parts)


def _groups(metric: str) -> dict[str, list[str]] | None:
    """The metric's exporter families by vendor prefix; ``None`` if one is not a vendor's."""
    out: dict[str, list[str]] = {}
    for family in families(metric):
        prefix = _vendor(family)
        if prefix is None:
            return None
        out.setdefault(prefix, []).append(family)
    if metric == HBM_TOTAL and "DCGM_" in out:
        out["DCGM_"] = [FB_USED, FB_FREE]
    if metric == HEALTH and "DCGM_" in out:
        out["DCGM_"] = sorted(HEALTH_INPUTS)
    return out


def _fold_per_card(
    reader: _Reader,
    metric: str,
    grid: Grid,
    *,
    only: list[str] | None = None,
    selector: Callable[[str], str] | None = None,
) -> dict[Hashable, CardAgg]:
    """One series per card through the ingestion mapping (``only`` these families,
    ``selector`` narrowing each), one value per card and key."""
    results = []
    for family in only or families(metric):
        expr = selector(family) if selector else reader._sel(family)
        results += [(family, s) for s in grid.ask(expr)]
    seen: dict[Hashable, dict[tuple, float]] = {}
    for sample in to_mapped(results, label_map=reader.label_map):
        if sample.metric != metric or sample.entity.kind != "accelerator":
            continue
        card = (sample.entity.host, sample.entity.index, sample.entity.vendor_id)
        seen.setdefault(grid.sample_key(sample), {})[card] = sample.value
    return {
        key: CardAgg(len(cards), float(sum(cards.values())), sum(v >= ONE for v in cards.values()))
        for key, cards in seen.items()
    }


def _add_summary(per_chip: str, out: dict[Hashable, CardAgg], grid: Grid, keep: str = "") -> None:
    """Add the server's sum, count and count of ones of ``per_chip`` to ``out``."""
    for series in grid.ask(_summary_query(per_chip, keep)):
        tag = series.labels.get("agg")
        for ts, value in series.points:
            agg = out.setdefault(grid.key(series.labels, ts), CardAgg())
            if tag == "total":
                agg.total += float(value)
            elif tag == "cards":
                agg.cards += int(value)
            elif tag == "ones":
                agg.ones += int(value)


def fold_aggregated(
    reader: _Reader,
    metric: str,
    groups: dict[str, list[str]],
    grid: Grid,
    *,
    keep: tuple[str, ...] = (),
    mig: bool = True,
) -> dict[Hashable, CardAgg] | None:
    """The metric's sum, count and count of ones per ``grid`` key, aggregated by the server
    where the mapping allows; ``None`` where one family's mapping cannot be written in
    PromQL (the caller folds per card)."""
    exprs: dict[str, str | None] = {}
    for prefix, group in groups.items():
        if metric == HEALTH and prefix == "DCGM_":
            exprs[prefix] = None  # counted by _dcgm_health
            continue
        expr = _metric_expr(_Chips(reader, prefix, keep=keep, mig=mig), metric, group)
        if expr is None:
            return None
        exprs[prefix] = expr
    out: dict[Hashable, CardAgg] = {}
    for prefix, per_chip in exprs.items():
        chips = _Chips(reader, prefix, keep=keep, mig=mig)
        if per_chip is None:
            for key, agg in _dcgm_health(chips, grid).items():
                out.setdefault(key, CardAgg()).add(agg.cards, agg.total, agg.ones)
        else:
            _add_summary(per_chip, out, grid, chips.keep)
        # Chips without the chip label: one series each, folded as the store path folds them.
        unlabelled = _fold_per_card(
            reader,
            metric,
            grid,
            only=groups[prefix],
            selector=lambda family, c=chips: c.selector(family, has_chip_label=False),
        )
        for key, agg in unlabelled.items():
            out.setdefault(key, CardAgg()).add(agg.cards, agg.total, agg.ones)
    return {key: agg for key, agg in out.items() if agg.cards}


def record_name(metric: str, aggregate: str) -> str:
    """The name the shipped recording rules (``telemetry.read.promql.rules``) record under."""
    return f"cluster_portal:{metric}:{aggregate}"


def _recorded(
    reader: _Reader, metric: str, grid: Grid, *, suffix: str
) -> dict[Hashable, CardAgg] | None:
    """The metric's sum and card count per ``grid`` key from the shipped recording rules, or
    ``None`` where this source cannot read them or the server records none. The rules sum a
    whole server under the exporters' own label names, so a source narrowed by a selector
    or renaming labels reads the live aggregation instead."""
    if reader.source.selector or reader.label_map:
        return None
    if metric == HEALTH:
        return _recorded_health(reader, grid, suffix=suffix)
    return _recorded_summary(grid, metric, ("sum", "cards"), suffix=suffix) or None


def _recorded_summary(
    grid: Grid, metric: str, aggregates: tuple[str, ...], *, suffix: str, prefix: str = ""
) -> dict[Hashable, CardAgg]:
    """``cluster_portal:<metric>:<prefix><aggregate><suffix>`` for each of ``aggregates``
    (``sum``, ``cards``, ``ones``) in one query, filed by ``grid``."""
    names = {
        aggregate: record_name(metric, prefix + aggregate + suffix) for aggregate in aggregates
    }
    expr = " or ".join(
        f'label_replace({name}, "agg", "{aggregate}", "", "")' for aggregate, name in names.items()
    )
    out: dict[Hashable, CardAgg] = {}
    for series in grid.ask(expr):
        tag = series.labels.get("agg")
        for ts, value in series.points:
            agg = out.setdefault(grid.key(series.labels, ts), CardAgg(recorded=True))
            if tag == "sum":
                agg.total += float(value)
            elif tag == "cards":
                agg.cards += int(value)
            elif tag == "ones":
                agg.ones += int(value)
    return out


def _recorded_health(reader: _Reader, grid: Grid, *, suffix: str) -> dict[Hashable, CardAgg] | None:
    """The health point from the recording rules: dcgm's GPUs counted by the server with
    the failing chips named by the sparse recorded answers (decided here as live), other
    exporters' health summed and counted; ``None`` where the server records no dcgm count
    and no other exporter's (the rules are absent, or predate the health rules)."""
    out: dict[Hashable, CardAgg] = {}
    for prefix in _groups(HEALTH) or {}:
        if prefix == "DCGM_":
            # Per host a MIG GPU is one card (its slices share its health inputs).
            part = _dcgm_health(
                _Chips(reader, prefix, mig=not suffix),
                grid,
                present=dcgm_cards_record(suffix),
                recorded=True,
            )
        else:
            part = _recorded_summary(
                grid, HEALTH, ("sum", "cards", "ones"), suffix=suffix, prefix=_tag(prefix)
            )
        for key, agg in part.items():
            out.setdefault(key, CardAgg(recorded=True)).add(agg.cards, agg.total, agg.ones)
    return out or None


def _tag(prefix: str) -> str:
    """An exporter's part of a health rule's name: ``npu_``."""
    return prefix.strip("_").lower() + "_"


def dcgm_cards_record(suffix: str = "") -> str:
    """The recorded count of dcgm GPUs reporting a health input (``suffix``: ``_by_host``)."""
    return record_name(HEALTH, f"{_tag('DCGM_')}cards{suffix}")


def top_record(metric: str, prefix: str) -> str:
    """The recorded top :data:`RECORDED_TOP_N` chips of one exporter by ``metric``."""
    return record_name(metric, f"{_tag(prefix)}top{RECORDED_TOP_N}")


def dcgm_failing_recorded(reader: _Reader, grid: Grid) -> bool:
    """Whether the failing chips can be read from the recording rules on this source (the
    server records dcgm's health count: an empty failing answer then means none fail)."""
    if reader.source.selector or reader.label_map:
        return False
    return bool(grid.ask(dcgm_cards_record()))


def fold_recorded(
    reader: _Reader,
    metric: str,
    groups: dict[str, list[str]],
    grid: Grid,
    *,
    keep: tuple[str, ...] = (),
    suffix: str | None = None,
) -> dict[Hashable, CardAgg] | None:
    """As :func:`fold_aggregated`, from the recording rules where the server has them (the
    chips without a chip label, which the rules leave out, still folded one series each);
    ``None`` where it has none. ``suffix``: which records (``""`` the fleet's, ``_by_host``,
    ``_by_rack``); by default the fleet's, or the hosts' where ``keep`` names host labels."""
    if suffix is None:
        suffix = "_by_host" if keep else ""
    out = _recorded(reader, metric, grid, suffix=suffix)
    if out is None:
        return None
    for prefix, group in groups.items():
        chips = _Chips(reader, prefix, keep=keep)
        unlabelled = _fold_per_card(
            reader,
            metric,
            grid,
            only=group,
            selector=lambda family, c=chips: c.selector(family, has_chip_label=False),
        )
        for key, agg in unlabelled.items():
            out.setdefault(key, CardAgg(recorded=True)).add(agg.cards, agg.total, agg.ones)
    return {key: agg for key, agg in out.items() if agg.cards}


def card_buckets(
    source: PromQLDataSource,
    *,
    names: list[str],
    start: datetime,
    end: datetime,
    hour_aligned: bool = False,
) -> tuple[int, CardBuckets]:
    span = max(1.0, (end - start).total_seconds())
    step = max(MIN_STEP_SECONDS, math.ceil(span / TARGET_POINTS))
    if hour_aligned:  # per-hour figures: no step straddles an hour's edge
        step = hour_dividing_step(min(step, HOUR_SECONDS), 1)
    reader = _Reader(source)
    grid = range_grid(reader, start=start, end=end, step=step)
    buckets: CardBuckets = {}
    for name in names:
        groups = _groups(name)
        folded = None
        if groups:
            folded = fold_recorded(reader, name, groups, grid)
            if folded is None:
                folded = fold_aggregated(reader, name, groups, grid)
        if folded is None:
            folded = _fold_per_card(reader, name, grid)
        for at, agg in folded.items():
            buckets.setdefault(at, {})[name] = agg
    return step, buckets


def card_latest(source: PromQLDataSource, *, names: list[str], at: datetime) -> dict[str, CardAgg]:
    """Per card metric, the server's sum, count and count of ones of every chip's newest value
    at ``at`` (an instant vector: one evaluation per query, Prometheus' 5-minute lookback)."""
    reader = _Reader(source)

    def ask(expr: str) -> list[ResultSeries]:
        return reader._run(lambda: reader.client.query(expr, at=at))

    grid = Grid(ask=ask, key=lambda _labels, _ts: 0, sample_key=lambda _sample: 0)
    out: dict[str, CardAgg] = {}
    for name in names:
        groups = _groups(name)
        folded = None
        if groups:
            folded = fold_recorded(reader, name, groups, grid)
            if folded is None:
                folded = fold_aggregated(reader, name, groups, grid)
        if folded is None:
            folded = _fold_per_card(reader, name, grid)
        if 0 in folded:
            out[name] = folded[0]
    return out
