"""Latest values and fleet arrays per entity kind, from samples and frames.

The newest sample per point (the unique index read backwards) for sparse sources, and the
newest frame (one row per metric holding every entity of a kind) for the twin's fleet data.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
from django.db import connection
from django.db.models import Case, Count, F, FloatField, Func, Max, Q, QuerySet, Sum, When

from cluster_portal.web.rows import plain_rows
from cluster_portal.web.timerange import TimeRange
from telemetry.catalogue.registry import metrics_by_name
from telemetry.models import Entity, Frame, FrameLayout, MetricDefinition, Sample
from telemetry.read.local.frames import (
    frame_segments,
    frame_segments_many,
    latest_frame_values,
    latest_frames,
    segments_filter,
    stacked,
)
from telemetry.read.local.series import choose_source, series_means_many, series_read, utc_at
from telemetry.store.frames import COUNT_DTYPE, SUM_DTYPE, VALUE_DTYPE, layout_entity_ids

Points = list[tuple[datetime, float]]
# Latest values older than this are not "current": a stopped twin shows "no data", not a
# stale figure presented as live.
LATEST_WINDOW = timedelta(minutes=15)
# Exporters scrape every few seconds; the newest sample per card is within this window.
SAMPLE_WINDOW = timedelta(minutes=2)


def latest_scalars(entity: Entity | None, names: Iterable[str]) -> dict[str, float]:
    """Newest sample of each metric for one entity: on PostgreSQL one query whatever the
    number of metrics (each metric's newest point read backwards through the unique index)."""
    if entity is None:
        return {}
    cutoff = datetime.now(tz=UTC) - LATEST_WINDOW
    metrics = metrics_by_name(names)
    if not metrics:
        return {}
    names_by_id = {metric.pk: name for name, metric in metrics.items()}
    if connection.vendor == "postgresql":
        # One round trip: a LATERAL backwards index probe per metric.
        with connection.cursor() as cursor:
            cursor.execute(_PG_LATEST, [list(names_by_id), entity.pk, cutoff])
            return {names_by_id[metric_id]: value for metric_id, value in cursor.fetchall()}
    out: dict[str, float] = {}
    for metric_id, name in names_by_id.items():
        value = (
            Sample.objects.filter(metric_id=metric_id, entity=entity, ts__gte=cutoff)
            .order_by("-ts")
            .values_list("value", flat=True)
            .first()
        )
        if value is not None:
            out[name] = value
    return out


_PG_LATEST = """
SELECT m.id, s.value FROM unnest(%s::bigint[]) AS m(id)
CROSS JOIN LATERAL (
    SELECT value FROM monitoring_sample
    WHERE metric_id = m.id AND entity_id = %s AND ts >= %s ORDER BY ts DESC LIMIT 1
) AS s
"""


def latest_values(
    entities: Iterable[Entity] | QuerySet, *, since: timedelta = timedelta(hours=1)
) -> dict[int, dict[str, float]]:
    """``{entity_id: {metric name: latest value}}`` over the last ``since`` of raw data, and
    the newest frame for entities the twin writes as frames.

    On PostgreSQL one query for the whole list and its metric set: for every (metric, entity)
    pair a backwards probe of the unique (metric, entity, ts) index that stops at the newest
    point. The metric set of each entity kind is the catalogue's metrics of that kind (the
    exporter-only ones are registered under the kind they were first seen on). The old form
    — group the last hour by pair, then one OR term per pair — read every raw row of the hour
    and grew with the page: a 1,000-card page hit the 30 s worker timeout.
    """
    entities = list(entities)
    if not entities:
        return {}
    entity_ids = [e.pk for e in entities]
    cutoff = datetime.now(tz=UTC) - since
    result: dict[int, dict[str, float]] = defaultdict(dict)
    if connection.vendor == "postgresql":
        by_kind: dict[str, list[int]] = defaultdict(list)
        for entity in entities:
            by_kind[entity.kind].append(entity.pk)
        names: dict[int, str] = {}
        metric_ids: dict[str, list[int]] = defaultdict(list)
        for pk, name, kind in MetricDefinition.objects.filter(
            entity_kind__in=list(by_kind)
        ).values_list("pk", "name", "entity_kind"):
            names[pk] = name
            metric_ids[kind].append(pk)
        with connection.cursor() as cursor:
            for kind, ids in by_kind.items():
                if not metric_ids[kind]:
                    continue
                cursor.execute(_PG_LATEST_MANY, [metric_ids[kind], ids, cutoff])
                for metric_id, entity_id, value in cursor.fetchall():
                    result[entity_id][names[metric_id]] = value
    else:
        _latest_values_sqlite(entity_ids, cutoff, result)
    for entity_id, values in latest_frame_values(entity_ids, since=cutoff).items():
        result[entity_id].update(values)
    return dict(result)


_SQLITE_CHUNK = 500  # ids per statement, under SQLite's bound-parameter limit


def _latest_values_sqlite(
    entity_ids: list[int], cutoff: datetime, result: dict[int, dict[str, float]]
) -> None:
    """SQLite (the demo): the newest row per (entity, metric) joined back to its value, one
    statement per chunk of ids — not one query per pair, which grew with the page."""
    names = dict(MetricDefinition.objects.values_list("pk", "name"))
    table = Sample._meta.db_table
    for start in range(0, len(entity_ids), _SQLITE_CHUNK):
        newest = (
            Sample.objects.filter(
                entity_id__in=entity_ids[start : start + _SQLITE_CHUNK], ts__gte=cutoff
            )
            .values("metric_id", "entity_id")
            .annotate(last=Max("ts"))
        )
        inner, params = newest.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT s.metric_id, s.entity_id, s.value FROM {table} AS s JOIN ({inner}) AS g"
                " ON s.metric_id = g.metric_id AND s.entity_id = g.entity_id AND s.ts = g.last",
                params,
            )
            for metric_id, entity_id, value in cursor.fetchall():
                if metric_id in names:
                    result[entity_id][names[metric_id]] = value


# Metric outer, entity inner: consecutive probes walk neighbouring pages of the index.
_PG_LATEST_MANY = """
SELECT m.id, e.id, s.value FROM unnest(%s::bigint[]) AS m(id)
CROSS JOIN unnest(%s::bigint[]) AS e(id)
CROSS JOIN LATERAL (
    SELECT value FROM monitoring_sample
    WHERE metric_id = m.id AND entity_id = e.id AND ts >= %s ORDER BY ts DESC LIMIT 1
) AS s
"""


def series_points(metric: MetricDefinition | None, entity: Entity | None, tr: TimeRange) -> Points:
    """``(time, mean)`` points of one entity's metric at the resolution the range calls for."""
    if metric is None or entity is None:
        return []
    series = series_read(metric=metric, entity=entity, start=tr.start, end=tr.end)
    return [(p.ts, p.mean) for p in series.points]


def series_points_many(
    metrics: Iterable[MetricDefinition | None], entity: Entity | None, tr: TimeRange
) -> dict[str, Points]:
    """``{metric name: (time, mean) points}`` for several metrics of one entity, a few
    queries in all (see ``series_read_many``); unknown metrics are left out."""
    known = [m for m in metrics if m is not None]
    if entity is None or not known:
        return {}
    return series_means_many(metrics=known, entity=entity, start=tr.start, end=tr.end)


@dataclass(frozen=True)
class KindSnapshot:
    """Newest value of several metrics for every entity of a kind in a cluster."""

    ids: np.ndarray  # entity ids (int64)
    values: dict[str, np.ndarray]  # metric name -> float64 aligned with ids; NaN = no value
    ts: datetime | None

    def get(self, name: str) -> np.ndarray:
        return self.values.get(name, np.full(self.ids.size, np.nan))

    def positions(self, entity_ids: np.ndarray) -> np.ndarray:
        """Where each of ``entity_ids`` sits in this snapshot (-1: not in it), by sorted
        search rather than a per-id dictionary (a fleet has thousands)."""
        entity_ids = np.asarray(entity_ids, np.int64)
        out = np.full(entity_ids.size, -1, np.int64)
        if not self.ids.size or not entity_ids.size:
            return out
        order = np.argsort(self.ids, kind="stable")
        found = np.minimum(np.searchsorted(self.ids, entity_ids, sorter=order), self.ids.size - 1)
        hit = self.ids[order[found]] == entity_ids
        out[hit] = order[found[hit]]
        return out

    def by_entity(self) -> dict[int, dict[str, float]]:
        out: dict[int, dict[str, float]] = {}
        for name, array in self.values.items():
            has = ~np.isnan(array)
            for entity_id, value in zip(self.ids[has].tolist(), array[has].tolist(), strict=True):
                out.setdefault(entity_id, {})[name] = value
        return out


def _current_layout(cluster_id: int, kind: str, metric: MetricDefinition, since: datetime):
    newest = (
        Frame.objects.filter(
            layout__cluster_id=cluster_id,
            layout__kind=kind,
            metric=metric,
            resolution=0,
            ts__gte=since,
        )
        .order_by("-ts")
        .values_list("layout_id", flat=True)
        .first()
    )
    return FrameLayout.objects.filter(pk=newest).first() if newest else None


def latest_kind(cluster_id: int, kind: str, names: Iterable[str]) -> KindSnapshot:
    """Newest frame of each metric (one row per metric for the whole fleet) plus, for
    entities an exporter reports as samples, their newest sample in ``SAMPLE_WINDOW``.

    Queries: 2 + one per metric, whatever the cluster size.
    """
    now = datetime.now(tz=UTC)
    metrics = metrics_by_name(names)
    ids = np.zeros(0, dtype=np.int64)
    values: dict[str, np.ndarray] = {}
    newest_ts: datetime | None = None
    layout = None
    if metrics:
        layout = _current_layout(
            cluster_id, kind, next(iter(metrics.values())), now - LATEST_WINDOW
        )
    if layout is not None:
        ids = layout_entity_ids(layout)
        found = latest_frames(metrics=metrics.values(), layout=layout, since=now - LATEST_WINDOW)
        for name, metric in metrics.items():
            if metric.pk in found:
                ts, array = found[metric.pk]
                values[name] = array.astype(np.float64)
                newest_ts = max(newest_ts, ts) if newest_ts else ts
    sampled: dict[str, dict[int, float]] = defaultdict(dict)
    if metrics:
        by_id = {m.pk: name for name, m in metrics.items()}
        rows = (
            Sample.objects.filter(
                metric_id__in=list(by_id),
                entity__cluster_id=cluster_id,
                entity__kind=kind,
                ts__gte=now - SAMPLE_WINDOW,
            )
            .order_by("ts")
            .values_list("metric_id", "entity_id", "value", "ts")
        )
        for metric_id, entity_id, value, ts in rows.iterator():
            sampled[by_id[metric_id]][entity_id] = value  # ordered by time: newest wins
            newest_ts = max(newest_ts, ts) if newest_ts else ts
    if sampled:
        extra = sorted({e for per in sampled.values() for e in per} - set(ids.tolist()))
        ids = np.concatenate([ids, np.array(extra, dtype=np.int64)])
        position = {entity_id: i for i, entity_id in enumerate(ids.tolist())}
        for name in metrics:
            array = np.full(ids.size, np.nan)
            array[: values[name].size if name in values else 0] = values.get(name, [])
            for entity_id, value in sampled.get(name, {}).items():
                array[position[entity_id]] = value
            values[name] = array
    values = {name: array for name, array in values.items() if array.size == ids.size}
    return KindSnapshot(ids=ids, values=values, ts=newest_ts)


def kind_series(
    *,
    cluster_id: int,
    kind: str,
    metric: MetricDefinition | None,
    tr: TimeRange,
    entity_ids: set[int] | None = None,
    reduce: str = "sum",
) -> Points:
    """One metric summed (or averaged) over the entities of a kind, over time, from frames.

    Reads the whole layout's rollup frames at the range's resolution (raw frames for short
    ranges; finer or coarser tiers where that one does not reach back, see
    ``frame_segments``). For the whole kind each frame's stored reduction is read (two
    numbers per time, whatever the number of entities); for a subset (``entity_ids``), and
    for frames written before reductions were stored, the arrays are read — one query per
    tier, one array per layout. Each plotted point is the mean of the per-bucket totals
    inside its step.
    """
    if metric is None:
        return []
    _, resolution, step = choose_source(tr.start, tr.end)
    layouts = {}
    found = FrameLayout.objects.filter(cluster_id=cluster_id, kind=kind)
    if entity_ids is None:
        # The whole kind: every position counts, so the entity-id blob need not be read.
        for layout_id, size in found.values_list("pk", "size"):
            if size:
                layouts[layout_id] = (size, np.ones(size, bool))
    else:
        for layout in found:
            mask = np.isin(layout_entity_ids(layout), list(entity_ids))
            if mask.any():
                layouts[layout.pk] = (layout.size, mask)
    segments = frame_segments(
        metric_id=metric.pk,
        layout_ids=list(layouts),
        resolution=resolution,
        start=tr.start,
        end=tr.end,
    )
    buckets: dict[int, list[float]] = {}

    def add(at: float, value: float, n: int = 1) -> None:
        agg = buckets.setdefault(int(at // step * step), [0.0, 0])
        agg[0] += value
        agg[1] += n

    for tier, parts in segments.items():
        frames = Frame.objects.filter(segments_filter(parts), metric=metric, resolution=tier)
        if entity_ids is not None:
            _kind_series_from_arrays(frames, tier, layouts, reduce, add)
            continue
        # The whole kind: each frame's stored reduction, two numbers per time. Frames written
        # before those were kept (null) are reduced from their arrays.
        if connection.vendor == "postgresql":
            legacy = False
            means = {metric.pk} if reduce == "mean" else set()
            for _metric_id, at, total, n, old in _reduction_buckets(frames, step, means):
                legacy = legacy or bool(old)
                if n:
                    add(at, total, n)
        else:
            legacy = False
            rows = frames.order_by().values_list("ts", "entities_sum", "entities_count")
            for ts, total, count in rows:
                if count is None:
                    legacy = True
                elif count:
                    add(ts.timestamp(), total if reduce == "sum" else total / count)
        if legacy:
            old = frames.filter(entities_count__isnull=True)
            _kind_series_from_arrays(old, tier, layouts, reduce, add)
    return [(utc_at(key), total / n) for key, (total, n) in sorted(buckets.items())]


def kind_series_many(
    *, cluster_id: int, kind: str, metrics: dict[str, str], tr: TimeRange
) -> dict[str, Points]:
    """Several whole-kind curves at once: ``{metric name: "sum" | "mean"}`` →
    ``{metric name: points}``, the same points :func:`kind_series` gives for each.

    On PostgreSQL three queries for all of them (layouts, tiers, one grouped fold of the
    stored reductions); metrics with frames from before reductions were stored, and other
    databases, read each curve on its own."""
    defs = metrics_by_name(metrics)
    out: dict[str, Points] = {name: [] for name in metrics}
    if connection.vendor != "postgresql" or not defs:
        for name, metric in defs.items():
            out[name] = kind_series(
                cluster_id=cluster_id, kind=kind, metric=metric, tr=tr, reduce=metrics[name]
            )
        return out
    _, resolution, step = choose_source(tr.start, tr.end)
    layout_ids = [
        pk
        for pk, size in FrameLayout.objects.filter(cluster_id=cluster_id, kind=kind).values_list(
            "pk", "size"
        )
        if size
    ]
    segments = frame_segments_many(
        metric_ids=[m.pk for m in defs.values()],
        layout_ids=layout_ids,
        resolution=resolution,
        start=tr.start,
        end=tr.end,
    )
    # Metrics whose tiers cover the same spans (the usual case: written together) share one
    # condition, so PostgreSQL walks the unique index once per span with ``metric_id IN``.
    by_span: dict[tuple, list[int]] = {}
    for metric_id, tiers in segments.items():
        for tier, parts in tiers.items():
            by_span.setdefault((tier, tuple(parts)), []).append(metric_id)
    where = Q(pk__in=[])
    for (tier, parts), metric_ids in by_span.items():
        where |= Q(segments_filter(list(parts)), metric_id__in=metric_ids, resolution=tier)
    means = {m.pk for name, m in defs.items() if metrics[name] == "mean"}
    buckets: dict[int, dict[int, list[float]]] = {}
    legacy: set[int] = set()
    for metric_id, at, total, n, old in _reduction_buckets(
        Frame.objects.filter(where), step, means
    ):
        if old:
            legacy.add(metric_id)
        if n:
            agg = buckets.setdefault(metric_id, {}).setdefault(int(at), [0.0, 0])
            agg[0] += total
            agg[1] += n
    for name, metric in defs.items():
        if metric.pk in legacy:
            out[name] = kind_series(
                cluster_id=cluster_id, kind=kind, metric=metric, tr=tr, reduce=metrics[name]
            )
            continue
        out[name] = [
            (utc_at(key), total / n)
            for key, (total, n) in sorted(buckets.get(metric.pk, {}).items())
        ]
    return out


def _reduction_buckets(frames, step: int, mean_metric_ids: set[int]):
    """The frames' stored reductions folded into ``step`` buckets inside PostgreSQL, per
    metric: ``(metric id, bucket start, total, frames, frames without a reduction)`` rows.

    One row per plotted point instead of one per frame (a 24-hour curve reads 480 rows, not
    1,440, and parses no timestamps). A frame's value is its entities' sum, or their mean for
    ``mean_metric_ids``; frames whose reduction was never stored are only counted, so the
    caller can read them from their arrays."""
    value = Case(
        When(metric_id__in=mean_metric_ids, then=F("entities_sum") / F("entities_count")),
        default=F("entities_sum"),
        output_field=FloatField(),
    )
    bucket = Func(
        F("ts"),
        # ``step`` is an int chosen by choose_source, never user text; date_part is a
        # double, cheaper to divide than EXTRACT's numeric.
        template=f"floor(date_part('epoch', %(expressions)s) / {int(step)}) * {int(step)}",
        output_field=FloatField(),
    )
    rows = (
        frames.order_by()
        .annotate(bucket=bucket)
        .values("metric_id", "bucket")
        .annotate(
            total=Sum(value, filter=Q(entities_count__gt=0)),
            n=Count("pk", filter=Q(entities_count__gt=0)),
            legacy=Count("pk", filter=Q(entities_count__isnull=True)),
        )
        .values_list("metric_id", "bucket", "total", "n", "legacy")
    )
    # Straight off the cursor: Django's per-row converters were a sixth of a page's reads.
    for metric_id, at, total, n, old in plain_rows(rows):
        yield metric_id, float(at), float(total or 0.0), int(n), int(old)


def _kind_series_from_arrays(frames, tier: int, layouts: dict, reduce: str, add) -> None:
    """Reduce frames over entities from their arrays: one query for every layout and time,
    each layout's rows as one (frames × entities) array reduced per row by NumPy."""
    fields = ("layout_id", "ts", "values") if tier == 0 else ("layout_id", "ts", "sum", "count")
    grouped: dict[int, list] = {}
    for row in frames.order_by().values_list(*fields).iterator():
        grouped.setdefault(row[0], []).append(row[1:])
    for layout_id, rows in grouped.items():
        size, mask = layouts[layout_id]
        times = np.array([f[0].timestamp() for f in rows])
        if tier == 0:
            per_entity = stacked([bytes(f[1]) for f in rows], VALUE_DTYPE, size)
            per_entity = per_entity[:, mask].astype(np.float64)
        else:
            total = stacked([bytes(f[1]) for f in rows], SUM_DTYPE, size)[:, mask]
            count = stacked([bytes(f[2]) for f in rows], COUNT_DTYPE, size)[:, mask]
            with np.errstate(invalid="ignore", divide="ignore"):
                per_entity = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        present = ~np.isnan(per_entity).all(axis=1)
        if not present.any():
            continue
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            reduced = (
                np.nansum(per_entity, axis=1) if reduce == "sum" else np.nanmean(per_entity, axis=1)
            )
        for at, value in zip(times[present].tolist(), reduced[present].tolist(), strict=True):
            add(at, value)
