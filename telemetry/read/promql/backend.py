"""A cluster's PromQL data source as a :class:`telemetry.read.backend.ReadBackend`.

Every figure is read from the server (``reads``, ``fleet``, ``serving``); nothing is copied
into the store. What the server does not hold is said, not guessed: it holds no cluster
entity, so the ``stored_cluster_*`` reads answer "nothing written" and every cluster figure
is derived from the cards (``telemetry.read.figures``). Attribution reads the intervals the
PromQL sync records from the cards' pod labels (``telemetry.services.promql_sync``), the
same rows the store path writes. A failing server raises ``DataSourceUnavailable``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from cluster_portal.web.timerange import TimeRange
from inventory.models import Cluster
from telemetry.families.identity import HOST_DERIVED_CHIP
from telemetry.models import (
    Entity,
    EntityKind,
    MetricDefinition,
    PromQLDataSource,
    ServingBinding,
)
from telemetry.models.vouching import vouched_for
from telemetry.read.backend import ReadBackend
from telemetry.read.fleet import SOURCE_PROMQL, CardAgg, CardBuckets
from telemetry.read.local.attribution import RecordedAttribution
from telemetry.read.local.entity_windows import MeasurementError, WindowAggregate
from telemetry.read.local.kind_windows import KindWindow, WindowValues
from telemetry.read.local.latest import KindSnapshot, Points
from telemetry.read.local.runs import SpanRuns, runs_of_series
from telemetry.read.local.series import Series
from telemetry.read.local.serving import ServingWindow
from telemetry.read.local.serving_many import ServingWindows
from telemetry.read.local.windows import WindowStat
from telemetry.read.promql import fleet as _fleet
from telemetry.read.promql import hosts as _hosts
from telemetry.read.promql import reads
from telemetry.read.promql import serving as _serving
from telemetry.read.promql.translate import entity_key as key_of
from telemetry.read.racks import RackCardFigures
from telemetry.store.provenance import DATASOURCE_LABEL, trust_resolve

GROUP_FIELDS = {
    "rack": "rack__name",
    "supernode": "supernode__name",
    "cluster": "cluster__name",
    "tenant": "tenant__slug",
}


def _no_serving(start: datetime, end: datetime) -> ServingWindow:
    return ServingWindow(start, end, (), {}, {}, 0.0, 0.0, 0)


class PromQLBackend(RecordedAttribution, ReadBackend):
    """A cluster read from its Prometheus-compatible server (Prometheus, VictoriaMetrics,
    Thanos, Mimir)."""

    derived_source = SOURCE_PROMQL

    def __init__(self, source: PromQLDataSource) -> None:
        super().__init__(source.cluster_id)
        self.source = source

    @property
    def group(self) -> str:
        return f"promql:{self.source.pk}"

    def _trusted(self, trusted: Sequence[str] | None, requester_id: int | None) -> bool:
        """Whether the data source counts as evidence for these trust selectors."""
        if trusted is None:
            return True
        resolved = trust_resolve(
            cluster_id=self.cluster_id, selectors=trusted, requester_id=requester_id
        )
        return bool(resolved.datasource)

    # -- series ----------------------------------------------------------------------------

    def series_read(
        self, *, metric: MetricDefinition, entity: Entity, start: datetime, end: datetime
    ) -> Series:
        return reads.series_read(self.source, metric=metric, entity=entity, start=start, end=end)

    def series_read_many(
        self, *, metrics: list[MetricDefinition], entity: Entity, start: datetime, end: datetime
    ) -> dict[str, Series]:
        return {
            m.name: self.series_read(metric=m, entity=entity, start=start, end=end) for m in metrics
        }

    def series_read_entities(
        self, *, metric: MetricDefinition, entities: list[Entity], start: datetime, end: datetime
    ) -> dict[int, Series]:
        return {
            e.pk: self.series_read(metric=metric, entity=e, start=start, end=end) for e in entities
        }

    def series_points(self, *, metric: MetricDefinition, entity: Entity, tr: TimeRange) -> Points:
        series = self.series_read(metric=metric, entity=entity, start=tr.start, end=tr.end)
        return [(p.ts, p.mean) for p in series.points]

    def series_points_many(
        self, *, metrics: list[MetricDefinition], entity: Entity, tr: TimeRange
    ) -> dict[str, Points]:
        return {m.name: self.series_points(metric=m, entity=entity, tr=tr) for m in metrics}

    def runs_under(
        self,
        *,
        metric: MetricDefinition,
        spans: Sequence[tuple[Entity, datetime]],
        end: datetime,
        threshold: float,
        read_from: datetime,
    ) -> list[SpanRuns]:
        found = []
        for entity, since in spans:
            series = self.series_read(metric=metric, entity=entity, start=read_from, end=end)
            found.append(runs_of_series(series, since, threshold))
        return found

    # -- window aggregates -----------------------------------------------------------------

    def window_aggregate(
        self,
        *,
        metric: str,
        entity_kind: str,
        entity_key: str,
        aggregation: str,
        start: datetime,
        end: datetime,
        trusted: Sequence[str] | None,
        requester_id: int | None,
    ) -> WindowAggregate:
        if not MetricDefinition.objects.filter(name=metric).exists():
            raise MeasurementError(f"unknown metric {metric!r}")
        result = reads.window_aggregate(
            self.source,
            metric=metric,
            entity_kind=entity_kind,
            entity_key=entity_key,
            aggregation=aggregation,
            start=start,
            end=end,
        )
        if trusted is None:
            return result
        label = DATASOURCE_LABEL  # not its URL: customers read measurements too
        if self._trusted(trusted, requester_id):
            return WindowAggregate(result.value, result.samples, sources={label: result.samples})
        return WindowAggregate(None, 0, ignored={label: result.samples} if result.samples else {})

    def window_values(
        self, *, rule: KindWindow, metric: MetricDefinition, now: datetime
    ) -> WindowValues:
        values = reads.window_values(
            self.source,
            kind=rule.entity_kind,
            aggregation=rule.aggregation,
            window_seconds=rule.window_seconds,
            metric=metric.name,
            now=now,
        )
        return WindowValues(values=values)

    def entity_sums(
        self, *, cluster: Cluster, metric_name: str, kind: str, start: datetime, end: datetime
    ) -> dict[int, tuple[float, int]]:
        # Raw values through the ingestion mapping (sentinels dropped as the store drops them).
        window = f"{max(1, int((end - start).total_seconds()))}s"
        samples = reads._Reader(self.source).instant(
            metric_name, at=end, template="{}[" + window + "]"
        )
        per_key: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
        for s in samples:
            if s.entity.kind == kind and start.timestamp() <= s.timestamp < end.timestamp():
                agg = per_key[key_of(s)]
                agg[0] += s.value
                agg[1] += 1
        ids = reads._entity_ids(self.cluster_id, kind, per_key)
        return {ids[key]: (total, n) for key, (total, n) in per_key.items() if key in ids and n}

    def aggregate_by(
        self, *, metric: MetricDefinition, since: datetime, group: str
    ) -> dict[str, float]:
        now = datetime.now(tz=UTC)
        window = f"{max(1, int((now - since).total_seconds()))}s"
        means: dict[str, float] = {}
        for s in reads._Reader(self.source).instant(
            metric.name, at=now, template="avg_over_time({}[" + window + "])"
        ):
            if s.entity.kind == metric.entity_kind:
                means[key_of(s)] = s.value
        field = GROUP_FIELDS[group]
        groups = dict(
            Entity.objects.filter(
                cluster_id=self.cluster_id,
                kind=metric.entity_kind,
                key__in=list(means),
                **{f"{field}__isnull": False},
            ).values_list("key", field)
        )
        totals: dict[str, list[float]] = {}
        for key, mean in means.items():
            if key in groups:
                agg = totals.setdefault(groups[key], [0.0, 0])
                agg[0] += mean
                agg[1] += 1
        return {name: total / n for name, (total, n) in totals.items()}

    # -- latest values, top-N, heatmaps ----------------------------------------------------

    def latest_scalars(self, *, entity: Entity, names: list[str]) -> dict[str, float]:
        by_key = reads.latest_by_key(self.source, kind=entity.kind, names=names)
        return by_key.get(entity.key, {})

    def latest_kind(self, *, kind: str, names: list[str]) -> KindSnapshot:
        return reads.latest_kind(self.source, kind=kind, names=names)

    def latest_values(
        self, *, entities: list[Entity], since: timedelta
    ) -> dict[int, dict[str, float]]:
        # An instant query's lookback (5 min on Prometheus) bounds "latest", not ``since``.
        # Cards with a chip label are asked for by it (an answer the size of the page, not of
        # the fleet: at 102,400 cards the fleet's answer passes the answer cap); chips named
        # by host and index, and other entities, by the fleet-wide read.
        labelled = [
            e.pk
            for e in entities
            if e.kind == EntityKind.ACCELERATOR and not HOST_DERIVED_CHIP.search(e.key)
        ]
        out: dict[int, dict[str, float]] = {}
        if labelled:
            out = _hosts.cards_latest(
                self.source, entity_ids=labelled, names=reads.mapped_metric_names()
            )
        asked = set(labelled)
        rest = [e for e in entities if e.pk not in asked]
        if rest:
            out.update(reads.latest_values(self.source, rest))
        return out

    def top_entities(
        self, *, metric: MetricDefinition, since: datetime, limit: int
    ) -> list[tuple[str, float]]:
        return reads.top_entities(self.source, metric=metric, since=since, limit=limit)

    # -- fleet curves ----------------------------------------------------------------------

    def card_buckets(
        self, *, names: list[str], start: datetime, end: datetime, hour_aligned: bool
    ) -> tuple[int, CardBuckets]:
        return _fleet.card_buckets(
            self.source, names=names, start=start, end=end, hour_aligned=hour_aligned
        )

    def rack_card_figures(self, *, names: list[str], hot_n: int) -> RackCardFigures:
        return _hosts.rack_card_figures(self.source, names=names, hot_n=hot_n)

    def cards_latest(
        self, *, entity_ids: Sequence[int], names: list[str]
    ) -> dict[int, dict[str, float]]:
        return _hosts.cards_latest(self.source, entity_ids=entity_ids, names=names)

    def fleet_latest(self, *, names: list[str]) -> dict[str, CardAgg]:
        # Summed and counted by the server (one answer per metric, whatever the fleet's size),
        # at one instant: a range over the lookback would make the server evaluate each query
        # at every step only for the newest to be kept.
        return _fleet.card_latest(self.source, names=names, at=datetime.now(tz=UTC))

    def stored_cluster_series(
        self,
        *,
        cluster: Cluster,
        metric_name: str,
        start: datetime,
        end: datetime,
        hour_aligned: bool,
    ) -> Series | None:
        return None  # the server holds no cluster entity: derived from the cards

    def stored_cluster_stats(
        self, *, cluster: Cluster, metric_names: list[str], start: datetime, end: datetime
    ) -> dict[str, WindowStat | None]:
        return dict.fromkeys(metric_names)

    def stored_data_span(
        self, *, cluster: Cluster, start: datetime, end: datetime
    ) -> tuple[datetime, datetime] | None:
        return None

    def stored_cluster_latest(self, *, cluster: Cluster, names: list[str]) -> dict[str, float]:
        return {}

    # -- serving endpoints -----------------------------------------------------------------

    def serving_window(
        self,
        *,
        start: datetime,
        end: datetime,
        workload_id: int | None,
        endpoint_keys: Sequence[str] | None,
        trusted: Sequence[str] | None,
        requester_id: int | None,
    ) -> ServingWindow:
        bindings = (
            list(ServingBinding.objects.filter(vouched_for(requester_id), workload_id=workload_id))
            if workload_id
            else []
        )
        for key in endpoint_keys or ():
            model, _, where = key.partition("@")
            bindings.append(ServingBinding(model_name=model, instance=where))
        if not bindings:
            return _no_serving(start, end)
        result = _serving.serving_window(self.source, bindings=bindings, start=start, end=end)
        if self._trusted(trusted, requester_id):
            return result
        ignored = {DATASOURCE_LABEL: result.scrapes} if result.scrapes else {}
        return ServingWindow(start, end, result.endpoints, {}, {}, 0.0, 0.0, 0, ignored=ignored)

    def serving_windows(
        self, *, workload_ids: Sequence[int], start: datetime, end: datetime
    ) -> ServingWindows:
        # One query set per workload; the pooled one sums every binding's buckets on the server.
        by_workload = {
            pk: self.serving_window(
                start=start,
                end=end,
                workload_id=pk,
                endpoint_keys=None,
                trusted=None,
                requester_id=None,
            )
            for pk in workload_ids
        }
        bindings = list(ServingBinding.objects.filter(workload_id__in=list(workload_ids)))
        pooled = (
            _serving.serving_window(self.source, bindings=bindings, start=start, end=end)
            if bindings
            else _no_serving(start, end)
        )
        return ServingWindows(by_workload=by_workload, pooled=pooled)
