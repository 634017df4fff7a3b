"""The portal's store as a :class:`telemetry.read.backend.ReadBackend`: every method is one of
the store's selectors in this package (rows, dense frames and three rollup tiers behind each)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from cluster_portal.web.timerange import TimeRange
from inventory.models import Cluster
from telemetry.models import Entity, MetricDefinition
from telemetry.read.backend import ReadBackend
from telemetry.read.fleet import SOURCE_DERIVED, CardAgg, CardBuckets, snapshot_aggs
from telemetry.read.local import entity_windows as _entity_windows
from telemetry.read.local import fleet as _fleet
from telemetry.read.local import kind_windows as _kind_windows
from telemetry.read.local import latest as _latest
from telemetry.read.local import racks as _racks
from telemetry.read.local import runs as _runs
from telemetry.read.local import series as _series
from telemetry.read.local import series_entities as _series_entities
from telemetry.read.local import serving as _serving
from telemetry.read.local import serving_many as _serving_many
from telemetry.read.local import windows as _windows
from telemetry.read.local.attribution import RecordedAttribution
from telemetry.read.local.entity_windows import WindowAggregate
from telemetry.read.local.kind_windows import KindWindow, WindowValues
from telemetry.read.local.latest import KindSnapshot, Points
from telemetry.read.local.runs import SpanRuns
from telemetry.read.local.series import Series
from telemetry.read.local.serving import ServingWindow
from telemetry.read.local.serving_many import ServingWindows
from telemetry.read.local.windows import WindowStat
from telemetry.read.racks import RackCardFigures
from telemetry.store.provenance import trust_resolve


class LocalBackend(RecordedAttribution, ReadBackend):
    """A cluster whose telemetry the portal stores itself (the twin, exporters, pushes)."""

    derived_source = SOURCE_DERIVED

    @property
    def group(self) -> str:
        return "store"

    def series_read(
        self, *, metric: MetricDefinition, entity: Entity, start: datetime, end: datetime
    ) -> Series:
        return _series.series_read(metric=metric, entity=entity, start=start, end=end)

    def series_read_many(
        self, *, metrics: list[MetricDefinition], entity: Entity, start: datetime, end: datetime
    ) -> dict[str, Series]:
        return _series.series_read_many(metrics=metrics, entity=entity, start=start, end=end)

    def series_read_entities(
        self, *, metric: MetricDefinition, entities: list[Entity], start: datetime, end: datetime
    ) -> dict[int, Series]:
        return _series_entities.series_read_entities(
            metric=metric, entities=entities, start=start, end=end
        )

    def series_points(self, *, metric: MetricDefinition, entity: Entity, tr: TimeRange) -> Points:
        return _latest.series_points(metric, entity, tr)

    def series_points_many(
        self, *, metrics: list[MetricDefinition], entity: Entity, tr: TimeRange
    ) -> dict[str, Points]:
        return _latest.series_points_many(metrics, entity, tr)

    def runs_under(
        self,
        *,
        metric: MetricDefinition,
        spans: Sequence[tuple[Entity, datetime]],
        end: datetime,
        threshold: float,
        read_from: datetime,
    ) -> list[SpanRuns]:
        return _runs.runs_under(
            metric=metric, spans=spans, end=end, threshold=threshold, read_from=read_from
        )

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
        trust = (
            None
            if trusted is None
            else trust_resolve(
                cluster_id=self.cluster_id, selectors=trusted, requester_id=requester_id
            )
        )
        return _entity_windows.window_aggregate(
            cluster_id=self.cluster_id,
            trust=trust,
            metric=metric,
            entity_kind=entity_kind,
            entity_key=entity_key,
            aggregation=aggregation,
            start=start,
            end=end,
        )

    def window_values(
        self, *, rule: KindWindow, metric: MetricDefinition, now: datetime
    ) -> WindowValues:
        return _kind_windows.window_values(rule=rule, metric=metric, now=now)

    def entity_sums(
        self, *, cluster: Cluster, metric_name: str, kind: str, start: datetime, end: datetime
    ) -> dict[int, tuple[float, int]]:
        return _windows.entity_sums(
            cluster=cluster, metric_name=metric_name, kind=kind, start=start, end=end
        )

    def aggregate_by(
        self, *, metric: MetricDefinition, since: datetime, group: str
    ) -> dict[str, float]:
        return _series.aggregate_by(
            metric=metric, cluster_id=self.cluster_id, since=since, group=group
        )

    def latest_scalars(self, *, entity: Entity, names: list[str]) -> dict[str, float]:
        return _latest.latest_scalars(entity, names)

    def latest_kind(self, *, kind: str, names: list[str]) -> KindSnapshot:
        return _latest.latest_kind(self.cluster_id, kind, names)

    def latest_values(
        self, *, entities: list[Entity], since: timedelta
    ) -> dict[int, dict[str, float]]:
        return _latest.latest_values(entities, since=since)

    def top_entities(
        self, *, metric: MetricDefinition, since: datetime, limit: int
    ) -> list[tuple[str, float]]:
        return _series.top_entities(
            metric=metric, cluster_id=self.cluster_id, since=since, limit=limit
        )

    def card_buckets(
        self, *, names: list[str], start: datetime, end: datetime, hour_aligned: bool
    ) -> tuple[int, CardBuckets]:
        return _fleet.card_buckets(
            cluster_id=self.cluster_id, names=names, start=start, end=end, hour_aligned=hour_aligned
        )

    def rack_card_figures(self, *, names: list[str], hot_n: int) -> RackCardFigures:
        return _racks.rack_card_figures(self.cluster_id, names)  # every card is a candidate

    def cards_latest(
        self, *, entity_ids: Sequence[int], names: list[str]
    ) -> dict[int, dict[str, float]]:
        return _racks.cards_latest(self.cluster_id, entity_ids, names)

    def fleet_latest(self, *, names: list[str]) -> dict[str, CardAgg]:
        return snapshot_aggs(_latest.latest_kind(self.cluster_id, "accelerator", names))

    def stored_cluster_series(
        self,
        *,
        cluster: Cluster,
        metric_name: str,
        start: datetime,
        end: datetime,
        hour_aligned: bool,
    ) -> Series | None:
        return _windows.cluster_series(cluster, metric_name, start, end, hour_aligned=hour_aligned)

    def stored_cluster_stats(
        self, *, cluster: Cluster, metric_names: list[str], start: datetime, end: datetime
    ) -> dict[str, WindowStat | None]:
        return _windows.cluster_stats(cluster, metric_names, start, end)

    def stored_data_span(
        self, *, cluster: Cluster, start: datetime, end: datetime
    ) -> tuple[datetime, datetime] | None:
        return _windows.data_span(cluster, start, end)

    def stored_cluster_latest(self, *, cluster: Cluster, names: list[str]) -> dict[str, float]:
        entity = _windows.cluster_entity(cluster)
        return _latest.latest_scalars(entity, names) if entity is not None else {}

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
        trust = (
            None
            if trusted is None
            else trust_resolve(
                cluster_id=self.cluster_id, selectors=trusted, requester_id=requester_id
            )
        )
        entities = _serving.bound_entities(
            cluster_id=self.cluster_id,
            workload_id=workload_id,
            endpoint_keys=list(endpoint_keys or ()),
            requester_id=requester_id,
        )
        return _serving.serving_window(entities=entities, start=start, end=end, trust=trust)

    def serving_windows(
        self, *, workload_ids: Sequence[int], start: datetime, end: datetime
    ) -> ServingWindows:
        return _serving_many.serving_windows(
            cluster_id=self.cluster_id, workload_ids=list(workload_ids), start=start, end=end
        )
