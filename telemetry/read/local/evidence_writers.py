"""The writers a plan's gates could count on a cluster, with who made and approved each (the
plan page's evidence panel, issue 31 §4)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from telemetry.models import ExporterTarget, PromQLDataSource, ServingBinding


@dataclass(frozen=True)
class EvidenceWriter:
    """One exporter target, data source or serving binding; ``created_by``/``approved_by`` are
    user ids (``None``: before creators were recorded / not approved)."""

    kind: str  # "exporter", "datasource", "binding"
    label: str
    created_by_id: int | None
    created_by: str | None
    created_at: datetime | None
    approved_by: str | None
    approved_by_id: int | None
    approved_at: datetime | None

    def counts_for(self, requester_id: int | None) -> bool:
        """Evidence on a plan requested by ``requester_id`` (``vouching.vouched_for``)."""
        if requester_id is None or self.created_by_id is None:
            return True
        if self.created_by_id != requester_id:
            return True
        return self.approved_by_id is not None and self.approved_by_id != requester_id


def evidence_writers(*, cluster_id: int, workload_ids: list[int]) -> list[EvidenceWriter]:
    """Exporter targets and the data source of ``cluster_id`` and the serving bindings of
    ``workload_ids``, newest first."""
    out: list[EvidenceWriter] = []
    related = ("created_by", "approved_by")
    rows = [
        ("exporter", t, f"exporter:{t.name}")
        for t in ExporterTarget.objects.filter(cluster_id=cluster_id).select_related(*related)
    ]
    rows += [
        ("datasource", s, f"datasource:{s.url}")
        for s in PromQLDataSource.objects.filter(cluster_id=cluster_id).select_related(*related)
    ]
    rows += [
        ("binding", b, f"binding:{b.workload.name} {b.key_prefix}")
        for b in ServingBinding.objects.filter(workload_id__in=workload_ids).select_related(
            "workload", *related
        )
    ]
    for kind, row, label in rows:
        out.append(
            EvidenceWriter(
                kind=kind,
                label=label,
                created_by_id=row.created_by_id,
                created_by=row.created_by.username if row.created_by else None,
                created_at=row.created_at,
                approved_by=row.approved_by.username if row.approved_by else None,
                approved_by_id=row.approved_by_id,
                approved_at=row.approved_at,
            )
        )
    out.sort(key=lambda w: w.created_at.timestamp() if w.created_at else 0.0, reverse=True)
    return out
