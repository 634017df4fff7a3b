"""The one interface every telemetry read goes through, and the choice of it per cluster.

A cluster's telemetry lives in exactly one place: the portal's store
(:class:`telemetry.read.local.backend.LocalBackend`) or the Prometheus-compatible server of its
enabled ``PromQLDataSource`` (:class:`telemetry.read.promql.backend.PromQLBackend`).
:func:`telemetry.read.choice.backend_for` makes that choice once per cluster; the façade
(:mod:`telemetry.read`) asks the backend and never branches on "store or server" itself — as
``rollout.routers`` is one interface per router.

**A method one backend lacks is an error at class creation**, not a silent empty figure:
:class:`ReadBackend` is an ``abc.ABC`` and ``__init_subclass__`` refuses a concrete subclass
that leaves an abstract method unimplemented (``abstract=True`` in the class statement
marks a shared intermediate base), or whose method takes positional arguments
(every read is keyword-only, so a caller can never swap two datetimes). Both backends are
instantiated when ``telemetry.read`` is imported, so a gap fails the import. Where a backend
genuinely cannot answer a figure it raises :class:`FigureUnavailable` (a 503 the pages and the
API already render as "data source unavailable for cluster …: figure unavailable: …"; gates
measure Inconclusive), never a wrong or empty number.

Every method answers for the backend's own cluster, except the ones whose arguments name
their entities (``series_read_entities``, ``runs_under``, ``latest_values``): the façade
groups entities by backend (:func:`telemetry.read.choice.group_by_backend`), and the store
answers all of its clusters' entities in one grouped query. ``window_values`` (alert rules,
fleet-wide) likewise asks the store once for every stored cluster and each PromQL backend
for its own.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, ClassVar

from django.utils.translation import gettext_lazy as _

from telemetry.read.promql.client import DataSourceUnavailable

if TYPE_CHECKING:
    from cluster_portal.web.timerange import TimeRange
    from inventory.models import Cluster
    from telemetry.models import Entity, MetricDefinition
    from telemetry.read.fleet import CardAgg, CardBuckets
    from telemetry.read.local.attribution import BoundInterval, HeldByHour
    from telemetry.read.local.entity_windows import WindowAggregate
    from telemetry.read.local.kind_windows import KindWindow, WindowValues
    from telemetry.read.local.latest import KindSnapshot, Points
    from telemetry.read.local.runs import SpanRuns
    from telemetry.read.local.series import Series
    from telemetry.read.local.serving import ServingWindow
    from telemetry.read.local.serving_many import ServingWindows
    from telemetry.read.local.windows import WindowStat
    from telemetry.read.racks import RackCardFigures


class FigureUnavailable(DataSourceUnavailable):
    """This backend cannot answer this figure (a recording rule it needs is missing, the
    server answered partial data, the figure has no PromQL form): the page says "figure
    unavailable: <reason>" (503 in the API's one error body), gates measure Inconclusive."""

    default_code = "figure_unavailable"

    def __init__(self, cluster: str, reason: str, detail: str = "") -> None:
        super().__init__(cluster, str(_("figure unavailable: %(reason)s") % {"reason": reason}))
        self.staff_detail = detail or self.reason


class ReadBackend(ABC):
    """Where one cluster's telemetry is read from (see the module docstring for the contract).

    ``cluster_id`` is the cluster the backend answers for (``None``: the store for every
    stored cluster); ``derived_source`` labels fleet figures derived from its card values
    (``telemetry.read.fleet.SOURCE_*``); ``group`` is equal for backends one grouped read can
    answer together (the store: every stored cluster)."""

    derived_source: ClassVar[str]

    def __init__(self, cluster_id: int | None) -> None:
        self.cluster_id = cluster_id

    @property
    @abstractmethod
    def group(self) -> str:
        """Backends with one ``group`` answer entity reads in one call."""

    def __init_subclass__(cls, *, abstract: bool = False, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if abstract:  # ``class Base(ReadBackend, abstract=True)``: a shared base, never used
            return
        # ABCMeta fills ``__abstractmethods__`` only after this hook; check it here so a
        # missing method fails where the class is written, not when it is first asked.
        missing = sorted(
            name
            for name in ReadBackend.__abstractmethods__
            if getattr(getattr(cls, name, None), "__isabstractmethod__", False)
        )
        if missing:
            raise TypeError(f"{cls.__name__} does not implement {', '.join(missing)}")
        for name in ReadBackend.__abstractmethods__:
            method = getattr(cls, name)
            if isinstance(method, property):
                continue
            params = list(inspect.signature(method).parameters.values())[1:]
            positional = [p.name for p in params if p.kind is not p.KEYWORD_ONLY]
            if positional:
                raise TypeError(f"{cls.__name__}.{name} takes {positional} positionally")

    # -- series ----------------------------------------------------------------------------

    @abstractmethod
    def series_read(
        self, *, metric: MetricDefinition, entity: Entity, start: datetime, end: datetime
    ) -> Series:
        """One entity's metric over the window at the resolution the span calls for."""

    @abstractmethod
    def series_read_many(
        self, *, metrics: list[MetricDefinition], entity: Entity, start: datetime, end: datetime
    ) -> dict[str, Series]:
        """Several metrics of one entity, by metric name."""

    @abstractmethod
    def series_read_entities(
        self, *, metric: MetricDefinition, entities: list[Entity], start: datetime, end: datetime
    ) -> dict[int, Series]:
        """One metric of many entities (of this backend's group), by entity id."""

    @abstractmethod
    def series_points(self, *, metric: MetricDefinition, entity: Entity, tr: TimeRange) -> Points:
        """``(time, mean)`` points of one entity's metric for a page's time range."""

    @abstractmethod
    def series_points_many(
        self, *, metrics: list[MetricDefinition], entity: Entity, tr: TimeRange
    ) -> dict[str, Points]:
        """``{metric name: points}`` for several metrics of one entity."""

    @abstractmethod
    def runs_under(
        self,
        *,
        metric: MetricDefinition,
        spans: Sequence[tuple[Entity, datetime]],
        end: datetime,
        threshold: float,
        read_from: datetime,
    ) -> list[SpanRuns]:
        """Per ``(entity, from)`` span, the runs of readings under ``threshold``; every span
        is bucketed over ``[read_from, end)`` (the earliest span of the whole read)."""

    # -- window aggregates -----------------------------------------------------------------

    @abstractmethod
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
        """A gate's value: one entity's aggregate from raw values, trusted sources only."""

    @abstractmethod
    def window_values(
        self, *, rule: KindWindow, metric: MetricDefinition, now: datetime
    ) -> WindowValues:
        """Alert rules: the aggregate of every entity of ``rule.entity_kind`` it holds."""

    @abstractmethod
    def entity_sums(
        self, *, cluster: Cluster, metric_name: str, kind: str, start: datetime, end: datetime
    ) -> dict[int, tuple[float, int]]:
        """``{entity id: (sum, count)}`` of the raw values in the window."""

    @abstractmethod
    def aggregate_by(
        self, *, metric: MetricDefinition, since: datetime, group: str
    ) -> dict[str, float]:
        """Mean of each entity's mean per rack, supernode, cluster or tenant."""

    # -- latest values, top-N, heatmaps ----------------------------------------------------

    @abstractmethod
    def latest_scalars(self, *, entity: Entity, names: list[str]) -> dict[str, float]:
        """The newest value of each named metric of one entity."""

    @abstractmethod
    def latest_kind(self, *, kind: str, names: list[str]) -> KindSnapshot:
        """Heatmaps: the newest value of each metric for every entity of a kind."""

    @abstractmethod
    def latest_values(
        self, *, entities: list[Entity], since: timedelta
    ) -> dict[int, dict[str, float]]:
        """``{entity id: {metric: newest value}}`` of entities of this backend's group."""

    @abstractmethod
    def top_entities(
        self, *, metric: MetricDefinition, since: datetime, limit: int
    ) -> list[tuple[str, float]]:
        """The ``limit`` entity keys with the highest mean since ``since``."""

    @abstractmethod
    def rack_card_figures(self, *, names: list[str], hot_n: int) -> RackCardFigures:
        """Rack heatmaps and hotspots: per rack the sum and count of each card metric's
        newest values, and the cards a top-``hot_n`` table may show (never one answer per
        card from a server)."""

    @abstractmethod
    def cards_latest(
        self, *, entity_ids: Sequence[int], names: list[str]
    ) -> dict[int, dict[str, float]]:
        """``{entity id: {metric: newest value}}`` for a few cards of this cluster (a rack's
        or a node's page)."""

    # -- fleet curves: stored cluster scalars, and card buckets to derive them from ---------

    @abstractmethod
    def card_buckets(
        self, *, names: list[str], start: datetime, end: datetime, hour_aligned: bool
    ) -> tuple[int, CardBuckets]:
        """``(step, {bucket: {metric: CardAgg}})`` of the cluster's cards."""

    @abstractmethod
    def fleet_latest(self, *, names: list[str]) -> dict[str, CardAgg]:
        """Per card metric, the sum and count of the cards' newest values (the KPIs)."""

    @abstractmethod
    def stored_cluster_series(
        self,
        *,
        cluster: Cluster,
        metric_name: str,
        start: datetime,
        end: datetime,
        hour_aligned: bool,
    ) -> Series | None:
        """The cluster scalar as written (twin, pushed figures); ``None``: derive it."""

    @abstractmethod
    def stored_cluster_stats(
        self, *, cluster: Cluster, metric_names: list[str], start: datetime, end: datetime
    ) -> dict[str, WindowStat | None]:
        """Window statistics of the written cluster scalars (``None``: derive them)."""

    @abstractmethod
    def stored_data_span(
        self, *, cluster: Cluster, start: datetime, end: datetime
    ) -> tuple[datetime, datetime] | None:
        """First and last time of the written cluster scalars (``None``: derive it)."""

    @abstractmethod
    def stored_cluster_latest(self, *, cluster: Cluster, names: list[str]) -> dict[str, float]:
        """The newest written cluster scalars (empty: derive them)."""

    # -- serving endpoints -----------------------------------------------------------------

    @abstractmethod
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
        """Serving figures of a workload's endpoints or of endpoints named by key."""

    @abstractmethod
    def serving_windows(
        self, *, workload_ids: Sequence[int], start: datetime, end: datetime
    ) -> ServingWindows:
        """Many workloads' serving figures over one window, each and pooled."""

    # -- attribution (the intervals the store path and the PromQL sync both record) --------

    @abstractmethod
    def attribution_held_by_hour(
        self, *, bindings: Sequence[tuple], start: datetime, end: datetime
    ) -> HeldByHour:
        """Card-seconds each ``(key, selector)`` binding held per hour."""

    @abstractmethod
    def attribution_bound_intervals(
        self, *, selector: str, start: datetime, end: datetime, limit: int
    ) -> tuple[list[BoundInterval], int]:
        """The intervals ``selector`` binds in the window (newest first) and their count."""
