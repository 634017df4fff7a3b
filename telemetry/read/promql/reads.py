"""The read API's functions for a cluster whose telemetry lives on a PromQL server.

Each returns the same types as the store's selectors. Raw-value reads (series, window
aggregates for gates and alert rules) fetch raw samples (``query_range`` or a range vector)
and aggregate them here after the ingestion mapping, so percentiles, DCGM sentinels and
npu-exporter's -1 are handled exactly as for stored data; latest values use an instant
vector; top-N uses ``avg_over_time``. Entity ids come from the portal's inventory: series of
cards the portal does not know yet are left out (``promql_inventory_sync`` registers them).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
from django.db.models.signals import post_delete, post_save
from django.utils import timezone

from telemetry.catalogue.registry import DeviceRef, devices_register
from telemetry.families.exposition import MappedSample
from telemetry.models import Entity, MetricDefinition, PromQLDataSource
from telemetry.read.local.entity_windows import WindowAggregate, aggregate
from telemetry.read.local.latest import KindSnapshot
from telemetry.read.local.series import Series, SeriesPoint
from telemetry.read.promql.client import (
    AnswerTooLarge,
    DataSourceUnavailable,
    PromQLClient,
    ResultSeries,
)
from telemetry.read.promql.translate import chip_label, families, selector, to_mapped
from telemetry.read.promql.translate import entity_key as key_of

#: Pages by a chip label's last character: each hex digit (either case), then anything else.
PAGE_CLASSES = tuple(f"[{c}{c.upper()}]" if c.isalpha() else c for c in "0123456789abcdef") + (
    "[^0-9a-fA-F]",
)
MAX_PAGE_DEPTH = 3  # 17**3 pages: far past any fleet's size at a few MB per page
TARGET_POINTS = 600
MIN_STEP_SECONDS = 15  # Prometheus' default scrape interval: finer steps only repeat points
SUCCESS_NOTE_SECONDS = 30


# Every read asks "does this cluster have a PromQL data source?"; the answer is cached in the
# process for a few seconds (and dropped at once when a source is saved or deleted here), so
# a page of many reads costs no extra query. Another process sees a change within the TTL.
SOURCES_TTL_SECONDS = 5.0
_sources_cache: tuple[float, dict[int, PromQLDataSource]] | None = None


def sources_cache_clear(**_kwargs) -> None:
    global _sources_cache
    _sources_cache = None


def _enabled_sources() -> dict[int, PromQLDataSource]:
    global _sources_cache
    now = time.monotonic()
    if _sources_cache is None or _sources_cache[0] < now:
        found = PromQLDataSource.objects.filter(enabled=True).select_related("cluster")
        _sources_cache = (now + SOURCES_TTL_SECONDS, {s.cluster_id: s for s in found})
    return _sources_cache[1]


post_save.connect(sources_cache_clear, sender=PromQLDataSource)
post_delete.connect(sources_cache_clear, sender=PromQLDataSource)


def source_for(cluster_id: int | None) -> PromQLDataSource | None:
    if cluster_id is None:
        return None
    return _enabled_sources().get(cluster_id)


def sources() -> list[PromQLDataSource]:
    return list(_enabled_sources().values())


class _Reader:
    def __init__(self, source: PromQLDataSource) -> None:
        self.source = source
        self.client = PromQLClient(
            cluster=source.cluster.name,
            url=source.url,
            bearer_token=source.bearer_token,
            timeout=source.timeout_seconds,
        )
        self.label_map = source.label_map or {}

    def _sel(self, family: str, vendor_id: str | None = None) -> str:
        return selector(
            family, extra=self.source.selector, label_map=self.label_map, vendor_id=vendor_id
        )

    def _run(self, call):
        try:
            result = call()
        except DataSourceUnavailable as exc:
            self.source.record_contact_error(exc.staff_detail[:2000])
            raise
        last = self.source.last_success_at
        now = timezone.now()
        if last is None or (now - last).total_seconds() > SUCCESS_NOTE_SECONDS:
            PromQLDataSource.objects.filter(pk=self.source.pk).update(last_success_at=now)
            self.source.last_success_at = now
        return result

    def instant(
        self, metric: str, *, at: datetime, template: str = "{}", vendor_id: str | None = None
    ) -> list[MappedSample]:
        """``template`` wraps the selector, e.g. ``"{}[300s]"`` or ``"avg_over_time({}[1h])"``."""
        results = []
        for family in families(metric):
            expr = template.format(self._sel(family, vendor_id))
            results += [(family, s) for s in self._run(lambda e=expr: self.client.query(e, at=at))]
        return [s for s in to_mapped(results, label_map=self.label_map) if s.metric == metric]

    def instant_paged(self, metric: str, *, at: datetime) -> list[MappedSample]:
        """As :meth:`instant`, for answers that grow with the fleet (the inventory sync): an
        answer past ``PROMQL_MAX_RESPONSE_BYTES`` is asked again in pages by the last
        characters of the chip label (UUID, ``vdie_id``): random ids such as dcgm's UUIDs
        split evenly; ids sharing a long suffix stop splitting at ``MAX_PAGE_DEPTH`` and the
        answer stays "larger than PROMQL_MAX_RESPONSE_BYTES"."""
        results = self.instant_series_paged(metric, at=at)
        return [s for s in to_mapped(results, label_map=self.label_map) if s.metric == metric]

    def instant_series_paged(
        self, metric: str, *, at: datetime, template: str = "{}"
    ) -> list[tuple[str, ResultSeries]]:
        """The server's answer for :meth:`instant_paged`, before the mapping; ``template``
        wraps each page's selector as in :meth:`instant`."""
        results = []
        for family in families(metric):
            base, label = self._sel(family), chip_label(family, self.label_map)
            answer = self._run(
                lambda b=base, lb=label: self._paged(b, lb, at=at, template=template)
            )
            results += [(family, s) for s in answer]
        return results

    def _paged(
        self,
        base: str,
        label: str | None,
        *,
        at: datetime,
        template: str = "{}",
        suffix: str = "",
        depth: int = 0,
    ) -> list:
        """``base`` (narrowed to chip labels ending in ``suffix``), split further while the
        answer is too large; series without the chip label are one page of their own."""
        narrowed = base if not suffix else f'{base[:-1]},{label}=~".*{suffix}"}}'
        try:
            return self.client.query(template.format(narrowed), at=at)
        except AnswerTooLarge:
            if label is None or depth >= MAX_PAGE_DEPTH:
                raise
        found = []
        for last in PAGE_CLASSES:
            found += self._paged(
                base, label, at=at, template=template, suffix=last + suffix, depth=depth + 1
            )
        # The values the longer suffixes cannot match: nothing before ``suffix`` (none at all
        # at the top level).
        exact = f'{label}=~"{suffix}"' if suffix else f'{label}=""'
        found += self.client.query(template.format(f"{base[:-1]},{exact}}}"), at=at)
        return found

    def ranged(
        self, metric: str, *, start: datetime, end: datetime, step: float, vendor_id: str | None
    ) -> list[MappedSample]:
        results = []
        for family in families(metric):
            expr = self._sel(family, vendor_id)
            results += [
                (family, s)
                for s in self._run(
                    lambda e=expr: self.client.query_range(e, start=start, end=end, step=step)
                )
            ]
        return [s for s in to_mapped(results, label_map=self.label_map) if s.metric == metric]


def _entity_ids(cluster_id: int, kind: str, keys: Iterable[str]) -> dict[str, int]:
    keys = list(set(keys))
    ids: dict[str, int] = {}
    for i in range(0, len(keys), 5000):
        ids.update(
            Entity.objects.filter(
                cluster_id=cluster_id, kind=kind, key__in=keys[i : i + 5000]
            ).values_list("key", "id")
        )
    return ids


def _vendor_id(entity: Entity) -> str | None:
    accelerator = getattr(entity, "accelerator", None) if entity.accelerator_id else None
    vendor = getattr(accelerator, "vendor_id", "") or ""
    return vendor if vendor and "/" not in vendor else None


def _window(seconds: float) -> str:
    return f"{max(1, math.ceil(seconds))}s"


def series_read(
    source: PromQLDataSource, *, metric: MetricDefinition, entity: Entity, start, end
) -> Series:
    span = max(1.0, (end - start).total_seconds())
    step = max(MIN_STEP_SECONDS, math.ceil(span / TARGET_POINTS))
    samples = _Reader(source).ranged(
        metric.name, start=start, end=end, step=step, vendor_id=_vendor_id(entity)
    )
    points = sorted(
        (s.timestamp, s.value)
        for s in samples
        if s.entity.kind == entity.kind and key_of(s) == entity.key
    )
    return Series(
        metric.name,
        entity.key,
        "promql",
        step,
        [
            SeriesPoint(datetime.fromtimestamp(ts, tz=UTC), v, v, v, 1)
            for ts, v in dict(points).items()
        ],
    )


def window_aggregate(
    source: PromQLDataSource,
    *,
    metric: str,
    entity_kind: str,
    entity_key: str,
    aggregation: str,
    start: datetime,
    end: datetime,
) -> WindowAggregate:
    entity = (
        Entity.objects.filter(cluster_id=source.cluster_id, kind=entity_kind, key=entity_key)
        .select_related("accelerator")
        .first()
    )
    vendor = _vendor_id(entity) if entity is not None else None
    samples = _Reader(source).instant(
        metric,
        at=end,
        template="{}[" + _window((end - start).total_seconds()) + "]",
        vendor_id=vendor,
    )
    values = [
        s.value
        for s in samples
        if s.entity.kind == entity_kind
        and key_of(s) == entity_key
        and start.timestamp() <= s.timestamp <= end.timestamp()
    ]
    return aggregate(np.asarray(values, dtype=np.float64), aggregation)


def window_values(
    source: PromQLDataSource, *, kind: str, aggregation: str, window_seconds: int, metric: str, now
) -> dict[int, float]:
    """``{entity_id: aggregate}`` for every known entity of ``kind`` with data in the window."""
    template = "{}[" + _window(window_seconds) + "]"
    samples = _Reader(source).instant(metric, at=now, template=template)
    per_key: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for s in samples:
        if s.entity.kind == kind:
            per_key[key_of(s)].append((s.timestamp, s.value))
    ids = _entity_ids(source.cluster_id, kind, per_key)
    out: dict[int, float] = {}
    for key, points in per_key.items():
        if key not in ids:
            continue
        values = [v for _, v in sorted(points)]
        if aggregation == "last":
            value = values[-1]
        elif aggregation == "mean":
            value = sum(values) / len(values)
        elif aggregation == "max":
            value = max(values)
        else:
            value = min(values)
        if math.isfinite(value):
            out[ids[key]] = float(value)
    return out


def latest_by_key(
    source: PromQLDataSource, *, kind: str, names: Iterable[str], vendor_id: str | None = None
) -> dict[str, dict[str, float]]:
    """``{entity key: {metric: newest value}}`` from an instant query (5-minute lookback)."""
    reader, now = _Reader(source), datetime.now(tz=UTC)
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for name in names:
        for s in reader.instant(name, at=now, vendor_id=vendor_id):
            if s.entity.kind == kind:
                out[key_of(s)][name] = s.value
    return dict(out)


def latest_kind(source: PromQLDataSource, *, kind: str, names: Iterable[str]) -> KindSnapshot:
    names = list(names)
    by_key = latest_by_key(source, kind=kind, names=names)
    ids = _entity_ids(source.cluster_id, kind, by_key)
    known = sorted(ids.items(), key=lambda item: item[1])
    id_array = np.array([entity_id for _, entity_id in known], dtype=np.int64)
    values = {}
    for name in names:
        array = np.array([by_key[key].get(name, np.nan) for key, _ in known], dtype=np.float64)
        if np.isfinite(array).any():
            values[name] = array
    return KindSnapshot(ids=id_array, values=values, ts=datetime.now(tz=UTC) if known else None)


def mapped_metric_names() -> list[str]:
    """Every mapped catalogue metric: what a list's "latest values" asks for."""
    return list(
        MetricDefinition.objects.filter(mapped=True).values_list("name", flat=True).order_by("name")
    )


def latest_values(source: PromQLDataSource, entities: list[Entity]) -> dict[int, dict[str, float]]:
    names = mapped_metric_names()
    out: dict[int, dict[str, float]] = {}
    for kind in {e.kind for e in entities}:
        by_key = latest_by_key(source, kind=kind, names=names)
        for entity in entities:
            if entity.kind == kind and entity.key in by_key:
                out[entity.pk] = by_key[entity.key]
    return out


def top_entities(
    source: PromQLDataSource, *, metric: MetricDefinition, since: datetime, limit: int
) -> list[tuple[str, float]]:
    now = datetime.now(tz=UTC)
    template = "avg_over_time({}[" + _window((now - since).total_seconds()) + "])"
    means: dict[str, float] = {}
    for s in _Reader(source).instant(metric.name, at=now, template=template):
        if s.entity.kind == metric.entity_kind:
            means[key_of(s)] = s.value
    return sorted(means.items(), key=lambda item: -item[1])[:limit]


# Accelerators are found from their utilisation, temperature and memory series, whichever
# exporter wrote them (a card reporting any one of them is named).
CARD_METRICS = (
    "accelerator_utilization_ratio",
    "accelerator_temperature_celsius",
    "accelerator_hbm_used_bytes",
)


def accelerators_reported(source: PromQLDataSource, *, at: datetime) -> list[MappedSample]:
    """Every card series the server reports at ``at`` (instant queries, Prometheus' 5-minute
    lookback), mapped by the ingestion mapping: entity, host and attribution labels exactly
    as the store path sees them. Raises ``DataSourceUnavailable`` (recorded on the source).

    Each sample's timestamp is its series' newest sample time on the server, not ``at``: an
    instant query stamps every answer with its evaluation time, so the queries ask for
    ``timestamp(...)`` (the raw sample's time, in Prometheus and VictoriaMetrics alike) and a
    series last written four minutes ago reads as four minutes old. Its value is therefore
    not the metric's (the sync needs only who, where and when); a card is reported if any of
    its series is, whatever that series' value.
    """
    reader = _Reader(source)
    out: list[MappedSample] = []
    first: dict[tuple, int] = {}  # a series' labels (its name aside) -> its sample in ``out``
    for metric in CARD_METRICS:
        fresh: list[tuple[str, ResultSeries]] = []
        for family, answer in reader.instant_series_paged(metric, at=at, template="timestamp({})"):
            series = _sampled_at(answer)
            seen = first.get(_labels_but_name(family, series))
            if seen is None:
                fresh.append((family, series))
            elif series.points and series.points[-1][0] > out[seen].timestamp:
                # The same card and holder under another field (an exporter's fields carry
                # one label set): only its newer sample time counts, not a second mapping.
                out[seen] = replace(out[seen], timestamp=float(series.points[-1][0]))
        for sample in to_mapped(fresh, label_map=reader.label_map):
            if sample.metric == metric and sample.entity.kind == "accelerator":
                family, series = fresh[sample.line - 1]
                first.setdefault(_labels_but_name(family, series), len(out))
                out.append(sample)
    return out


def _sampled_at(answer: ResultSeries) -> ResultSeries:
    """A ``timestamp(...)`` answer as one point at the sample's own time. Its value, 0, stands
    for "reported" and passes every mapping rule (no DCGM sentinel, not npu-exporter's -1)."""
    return ResultSeries(answer.labels, [(float(value), 0.0) for _at, value in answer.points])


def _labels_but_name(family: str, series: ResultSeries) -> tuple:
    """A series' labels without its metric name, with its exporter (the name's first word:
    ``DCGM``, ``npu``), whose mapping reads those labels."""
    name = series.labels.get("__name__") or family
    return (name.split("_", 1)[0], frozenset(series.labels.items() - {("__name__", name)}))


def accelerators_health_reported(source: PromQLDataSource, *, at: datetime) -> list[MappedSample]:
    """Every card's health point at ``at`` as the store path derives it (npu-exporter's own
    health, dcgm's from its XID/ECC/row-remap fields through the same mapping pass)."""
    return [
        s
        for s in _Reader(source).instant_paged("accelerator_health_status", at=at)
        if s.entity.kind == "accelerator"
    ]


def devices_of(samples: Iterable[MappedSample]) -> dict[str, DeviceRef]:
    """The cards ``samples`` name, by entity key."""
    devices: dict[str, DeviceRef] = {}
    for s in samples:
        e = s.entity
        # As the store path describes a card: a MIG slice names its GPU and profile.
        ref = DeviceRef(
            host=e.host,
            index=e.index,
            vendor_id=e.vendor_id,
            model_name=e.model_name or "",
            attributes=e.attributes,
            parent_vendor_id=e.parent_vendor_id,
        )
        devices.setdefault(ref.key, ref)
    return devices


def promql_inventory_sync(source: PromQLDataSource, *, lookback: timedelta | None = None) -> int:
    """Register the nodes and cards the server reports (no samples are copied); returns how
    many cards it names."""
    devices = devices_of(accelerators_reported(source, at=datetime.now(tz=UTC)))
    if devices:
        devices_register(source.cluster, devices.values())
    return len(devices)
