"""slurmrestd OpenAPI v0.0.38 (Slurm 22.05) → the portal's records. One module per REST
version: newer versions change these shapes (v0.0.40 nests numbers in ``{set, number}``
objects, for one), so each gets its own normaliser and none guesses at another's fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.utils.translation import gettext as _

from scheduling.slurm.notation import (
    NotationError,
    expand_hostlist,
    parse_gres_detail,
    parse_tres_gres,
)

VERSION = "v0.0.38"
JOBS = f"/slurm/{VERSION}/jobs"
NODES = f"/slurm/{VERSION}/nodes"
PARTITIONS = f"/slurm/{VERSION}/partitions"
# slurmdb's associations: served only when slurmrestd loads the dbv0.0.38 plugin (accounting
# through slurmdbd); the sync asks for it only where ``/openapi/v3`` offers it.
ASSOCIATIONS = f"/slurmdb/{VERSION}/associations"
# The GrpTRES names read as card quotas (untyped: ``gres/gpu``, not ``gres/gpu:h100``, which
# limits one card type only and is not the account's whole quota).
QUOTA_GRES = {"gpu": "gpus", "npu": "npus"}

# States after which a job holds nothing; its end_time is then the real end, not the limit.
FINAL_STATES = {
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
    "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT",
}  # fmt: skip


class AnswerError(ValueError):
    """The answer is not what v0.0.38 promises (garbage, or a wrong shape)."""


@dataclass
class JobRecord:
    job_id: int
    name: str
    account: str
    user_name: str
    partition: str
    state: str
    state_reason: str
    nodes: list[str]
    allocation: list[dict] = field(default_factory=list)
    gpus: int = 0
    npus: int = 0
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    estimated_start: datetime | None = None


@dataclass
class NodeRecord:
    name: str
    state: str
    gres: str
    gres_used: str
    partitions: list[str]
    reason: str


@dataclass
class PartitionRecord:
    name: str
    state: str
    nodes: list[str]


@dataclass
class QuotaRecord:
    """A card quota as a scheduler states it (``scope``/``origin``: the values of
    ``SchedulerQuota.Scope`` / ``.Origin``); ``None``: not limited for that card kind."""

    scope: str
    name: str
    partition: str
    origin: str
    gpus: int | None = None
    npus: int | None = None
    gpus_borrowing_limit: int | None = None
    npus_borrowing_limit: int | None = None
    reported_gpus: int | None = None
    reported_npus: int | None = None


def _moment(value) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return datetime.fromtimestamp(value, tz=UTC)


def _items(answer: object, key: str) -> list[dict]:
    if not isinstance(answer, dict) or not isinstance(answer.get(key), list):
        raise AnswerError(_("The answer has no %(key)s list.") % {"key": key})
    if not all(isinstance(item, dict) for item in answer[key]):
        raise AnswerError(_("The %(key)s list holds something other than objects.") % {"key": key})
    return answer[key]


def _text(item: dict, key: str) -> str:
    value = item.get(key)
    return value if isinstance(value, str) else ""


def job(item: dict) -> JobRecord:
    """One job; raises :class:`NotationError` (naming the text) when its nodes or cards do
    not parse, :class:`AnswerError` when it has no job id or state."""
    job_id, state = item.get("job_id"), item.get("job_state")
    if not isinstance(job_id, int) or isinstance(job_id, bool) or not isinstance(state, str):
        raise AnswerError(_("A job without a job_id or job_state."))
    nodes = expand_hostlist(_text(item, "nodes"))
    record = JobRecord(
        job_id=job_id,
        name=_text(item, "name"),
        account=_text(item, "account"),
        user_name=_text(item, "user_name"),
        partition=_text(item, "partition"),
        state=state,
        state_reason=_text(item, "state_reason"),
        nodes=nodes,
        submit_time=_moment(item.get("submit_time")),
    )
    if state != "PENDING":
        record.start_time = _moment(item.get("start_time"))
    else:  # a pending job's start_time is only the scheduler's estimate (0: none yet)
        record.estimated_start = _moment(item.get("start_time"))
    if state in FINAL_STATES:  # before that, end_time is start + time limit
        record.end_time = _moment(item.get("end_time"))
    detail = item.get("gres_detail") or []
    if not isinstance(detail, list) or not all(isinstance(d, str) for d in detail):
        raise AnswerError(
            _("Job %(id)s has a gres_detail that is not a list of strings.") % {"id": job_id}
        )
    if detail and len(detail) != len(nodes):
        raise NotationError(
            _("Job %(id)s lists cards for %(cards)s nodes but runs on %(nodes)s (%(text)r).")
            % {
                "id": job_id,
                "cards": len(detail),
                "nodes": len(nodes),
                "text": _text(item, "nodes"),
            }
        )
    counts: dict[str, int] = {}
    for node, text in zip(nodes, detail, strict=False):
        cards = parse_gres_detail(text)
        record.allocation.append({"node": node, "cards": [c.as_json() for c in cards]})
        for card in cards:
            counts[card.name] = counts.get(card.name, 0) + len(card.indices)
    if not record.allocation or state in FINAL_STATES and not counts:
        counts = _requested(item, job_id)
    record.gpus, record.npus = counts.get("gpu", 0), counts.get("npu", 0)
    return record


def _requested(item: dict, job_id: int) -> dict[str, int]:
    """Cards asked for, whichever way: ``--gpus`` lands in ``tres_per_job``; ``--gres`` and
    ``--gpus-per-node`` in ``tres_per_node`` (times the nodes); ``--gpus-per-task`` in
    ``tres_per_task`` (times the tasks)."""
    node_count = item.get("node_count") if isinstance(item.get("node_count"), int) else 1
    tasks = item.get("tasks") if isinstance(item.get("tasks"), int) else 1
    counts: dict[str, int] = {}
    for key, times in (("tres_per_job", 1), ("tres_per_node", max(node_count, 1)),
                       ("tres_per_task", max(tasks, 1))):  # fmt: skip
        for name, n in parse_tres_gres(_text(item, key)).items():
            counts[name] = counts.get(name, 0) + n * times
    return counts


def jobs(answer: object) -> tuple[list[JobRecord], list[tuple[int | None, str]]]:
    """Every job that reads, and (job id, why) for every one that does not."""
    records, refused = [], []
    for item in _items(answer, "jobs"):
        try:
            records.append(job(item))
        except (NotationError, AnswerError) as exc:
            job_id = item.get("job_id") if isinstance(item.get("job_id"), int) else None
            refused.append((job_id, str(exc)))
    return records, refused


def nodes(answer: object) -> list[NodeRecord]:
    out = []
    for item in _items(answer, "nodes"):
        if not _text(item, "name"):
            raise AnswerError(_("A node without a name."))
        partitions = item.get("partitions") if isinstance(item.get("partitions"), list) else []
        out.append(
            NodeRecord(
                name=item["name"],
                state=_text(item, "state"),
                gres=_text(item, "gres"),
                gres_used=_text(item, "gres_used"),
                partitions=[p for p in partitions if isinstance(p, str)],
                reason=_text(item, "reason"),
            )  # fmt: skip
        )
    return out


def partitions(answer: object) -> list[PartitionRecord]:
    out = []
    for item in _items(answer, "partitions"):
        if not _text(item, "name"):
            raise AnswerError(_("A partition without a name."))
        out.append(
            PartitionRecord(
                name=item["name"],
                state=_text(item, "state"),
                nodes=expand_hostlist(_text(item, "nodes")),
            )  # fmt: skip
        )
    return out


def quotas(answer: object) -> list[QuotaRecord]:
    """Account associations' ``GrpTRES`` on GPUs/NPUs (v0.0.38 states it in
    ``max.tres.total``). A user's own association is skipped: it limits one person inside the
    account, not the tenant the account maps to."""
    out = []
    for item in _items(answer, "associations"):
        if item.get("user"):
            continue
        account = _text(item, "account")
        if not account:
            raise AnswerError(_("An association without an account."))
        limits = (item.get("max") or {}).get("tres") if isinstance(item.get("max"), dict) else None
        total = limits.get("total") if isinstance(limits, dict) else None
        if not isinstance(total, list):
            raise AnswerError(
                _("Association %(account)r has no max.tres.total list.") % {"account": account}
            )
        record = QuotaRecord(
            scope="account", name=account, partition=_text(item, "partition"), origin="slurm"
        )
        for tres in total:
            field_name = QUOTA_GRES.get(tres.get("name")) if isinstance(tres, dict) else None
            if field_name is None or tres.get("type") != "gres":
                continue
            count = tres.get("count")
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise AnswerError(
                    _("Association %(account)r: GrpTRES gres/%(name)s is %(count)r, not a count.")
                    % {"account": account, "name": tres.get("name"), "count": count}
                )
            setattr(record, field_name, count)
        if record.gpus is not None or record.npus is not None:
            out.append(record)
    return out
