"""Provenance: which source wrote a batch, and which sources a gate's criterion trusts.

**Write side.** Every ingestion path names its writer once per batch — the twin (through
``telemetry.receivers.twin``), an exporter target (the scraper), or the token or signed-in user that
pushed JSON, exporter text or remote-write — as a :class:`~telemetry.models.SampleSource` id;
the store puts that id on every row and raw frame of the batch in the insert itself.

**Read side.** A criterion lists *trust selectors*; :func:`trust_resolve` turns them into the
source ids a measurement may count. Selectors:

- ``twin`` — the digital twin;
- ``exporters`` — every exporter target configured on the measured cluster;
- ``exporter:<name>`` — one exporter target;
- ``datasource`` — the cluster's PromQL data source, when reads go there;
- ``token:<id>`` — one operator-level integration token (e.g. a Prometheus that remote-writes),
  named explicitly; a tenant-bound token is never evidence.

No selectors means :data:`DEFAULT_TRUST`: the twin and the cluster's configured exporters and
data source — never a person's token or a tenant token, so whoever requests a promotion (or a
customer) cannot write the numbers that decide it. On a plan's gates, an exporter target, data
source or serving binding also needs a second person: it counts only if someone other than the
requester created or approved it (:func:`trust_resolve` ``requester_id``). Values of unknown
origin (written before provenance existed) are trusted by no gate.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from telemetry.models import ExporterTarget, PromQLDataSource, SampleSource
from telemetry.models.vouching import vouched_for

DEFAULT_TRUST: tuple[str, ...] = ("twin", "exporters", "datasource")
# Labels are ``kind:name`` (``twin``, ``exporter:dcgm-a``, ``token:ci``): pages translate the
# kind and show the name as it is.
UNKNOWN_LABEL = "unknown"
DATASOURCE_LABEL = "datasource"
_SIMPLE = {"twin", "exporters", "datasource"}


# key -> id of the sources this process has seen *committed*. Sources are never deleted
# (samples keep their id, ``DO_NOTHING``) and their key never changes, but a source created in
# a transaction that rolls back (a scrape killed mid-write) leaves an id with no row: the memo
# is therefore filled only after the creating transaction commits (``on_commit``), and reads
# label an id without a row "unknown" (:func:`source_labels`). It spares every remote-write
# request a query.
_SOURCE_IDS: dict[str, int] = {}


def source_ids_forget() -> None:
    """Empty the memo (tests roll back rows the memo would otherwise keep naming)."""
    _SOURCE_IDS.clear()


def _remember(key: str, pk: int) -> None:
    if len(_SOURCE_IDS) < 100_000:
        _SOURCE_IDS[key] = pk


def _ensure(key: str, **fields: object) -> int:
    cached = _SOURCE_IDS.get(key)
    if cached is not None:
        return cached
    found = SampleSource.objects.filter(key=key).values_list("pk", flat=True).first()
    if found is None:
        found = SampleSource.objects.get_or_create(key=key, defaults=fields)[0].pk
    transaction.on_commit(lambda: _remember(key, found))
    return found


def source_twin() -> int:
    """The digital twin's source id (every tick's rows and frames)."""
    return _ensure("twin", kind=SampleSource.Kind.TWIN, label="twin")


def source_exporter(target: ExporterTarget) -> int:
    """An exporter target's source id (the samples its scrapes store)."""
    return _ensure(
        f"exporter:{target.pk}",
        kind=SampleSource.Kind.EXPORTER,
        label=f"exporter:{target.name}",
        cluster_id=target.cluster_id,
        exporter_target=target,
    )


def source_for_principal(principal: object) -> int | None:
    """The source of a push: the request's token (``IntegrationPrincipal``) or signed-in user."""
    token = getattr(principal, "token", None)
    if token is not None:
        tenant = token.tenant
        label = f"token:{token.name}" + (f"@{tenant.slug}" if tenant else "")
        return _ensure(
            f"token:{token.pk}",
            kind=SampleSource.Kind.TOKEN,
            label=label[:200],
            token=token,
            user_id=token.owner_id,
            tenant_id=token.tenant_id,
        )
    pk = getattr(principal, "pk", None)
    if pk is None:
        return None
    return _ensure(
        f"user:{pk}",
        kind=SampleSource.Kind.USER,
        label=f"user:#{pk}",
        user_id=pk,
        tenant_id=getattr(principal, "tenant_id", None),
    )


@dataclass(frozen=True)
class Trust:
    """What one measurement may count: stored values from ``source_ids``, and the PromQL data
    source's answers when ``datasource``."""

    source_ids: frozenset[int]
    datasource: bool


def trust_selector_problems(selectors: object) -> list[str]:
    """English problems with a criterion's selectors (empty: valid). Shared by ``clean()``."""
    if not isinstance(selectors, list):
        return ["trusted sources must be a list of selectors"]
    problems = []
    for item in selectors:
        if not isinstance(item, str):
            problems.append(f"{item!r} is not a selector")
        elif item in _SIMPLE:
            continue
        elif item.startswith("exporter:"):
            if not ExporterTarget.objects.filter(name=item.split(":", 1)[1]).exists():
                problems.append(f"{item}: no such exporter target")
        elif item.startswith("token:"):
            problems.extend(_token_problems(item))
        else:
            problems.append(
                f"{item!r}: use twin, exporters, exporter:<name>, datasource or token:<id>"
            )
    return problems


def _token_problems(item: str) -> list[str]:
    from accounts.models import IntegrationToken

    ref = item.split(":", 1)[1]
    token = IntegrationToken.objects.filter(pk=int(ref)).first() if ref.isdigit() else None
    if token is None:
        return [f"{item}: no such token"]
    if token.tenant_id is not None:
        return [f"{item}: a tenant-bound token is never gate evidence"]
    return []


def trust_resolve(
    *, cluster_id: int, selectors: Sequence[str] | None, requester_id: int | None = None
) -> Trust:
    """The sources a measurement on ``cluster_id`` may count (:data:`DEFAULT_TRUST` if none).

    With ``requester_id`` (the plan's requester), an exporter target or PromQL data source
    counts only if someone else created or approved it (``telemetry.models.vouching``): the
    person asking for a promotion cannot add the writer that decides it."""
    chosen = set(selectors or DEFAULT_TRUST)
    ids: set[int] = set()
    sources = SampleSource.objects.all()
    if requester_id is not None:
        # Exporter sources whose target is gone or not vouched for drop out; others stay.
        sources = sources.exclude(
            Q(kind=SampleSource.Kind.EXPORTER)
            & ~Q(exporter_target__in=ExporterTarget.objects.filter(vouched_for(requester_id)))
        )
    if "twin" in chosen:
        ids.update(sources.filter(kind=SampleSource.Kind.TWIN).values_list("pk", flat=True))
    if "exporters" in chosen:
        ids.update(
            sources.filter(
                kind=SampleSource.Kind.EXPORTER, exporter_target__cluster_id=cluster_id
            ).values_list("pk", flat=True)
        )
    names = [s.split(":", 1)[1] for s in chosen if s.startswith("exporter:")]
    if names:
        ids.update(
            sources.filter(
                kind=SampleSource.Kind.EXPORTER, exporter_target__name__in=names
            ).values_list("pk", flat=True)
        )
    tokens = [int(r) for s in chosen if s.startswith("token:") for r in [s[6:]] if r.isdigit()]
    if tokens:
        # Checked again here, not only when the criterion was saved: never a tenant's token.
        ids.update(
            sources.filter(
                kind=SampleSource.Kind.TOKEN,
                token_id__in=tokens,
                tenant__isnull=True,
                token__tenant__isnull=True,
            ).values_list("pk", flat=True)
        )
    datasource = "datasource" in chosen
    if datasource and requester_id is not None:
        datasource = PromQLDataSource.objects.filter(
            vouched_for(requester_id), cluster_id=cluster_id
        ).exists()
    return Trust(source_ids=frozenset(ids), datasource=datasource)


def source_labels(ids: Iterable[int | None]) -> dict[int | None, str]:
    """``{source id: label}``; ``None`` (values from before provenance) and an id with no row
    (written by a transaction whose source rolled back) read ``unknown``, never a
    ``KeyError``: the mapping answers every id."""
    wanted = {i for i in ids if i is not None}
    labels: dict[int | None, str] = defaultdict(
        lambda: UNKNOWN_LABEL,
        SampleSource.objects.filter(pk__in=wanted).values_list("pk", "label"),
    )
    labels[None] = UNKNOWN_LABEL
    return labels


def counts_by_label(counts: Counter) -> dict[str, int]:
    """``{label: values}``, most first, from ``{source id: values}``: ids that read alike (several
    of unknown origin) are summed, not overwritten."""
    labels = source_labels(counts)
    out: Counter = Counter()
    for source, n in counts.items():
        out[labels[source]] += n
    return dict(out.most_common())
