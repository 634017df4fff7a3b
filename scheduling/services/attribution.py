"""Running jobs' allocations → the scheduler's attribution intervals (who holds which card).

Each job the scheduler reports running (or suspended, or completing: its cards stay
allocated) lists per node the GRES indices it holds (``gres_detail``, e.g.
``gpu:h100:4(IDX:0-3)``). A card is joined to the inventory by its node's host name and its
**index on the node**, among the cards of the GRES name's family (``gpu`` → GPUs, ``npu`` →
Ascend NPUs; Slurm numbers each name from 0). The inventory records no device file
(``/dev/nvidiaN``, ``/dev/davinciN``) per card, so GRES index N is taken to be the card the
exporter reports as index N. That holds when ``gres.conf`` lists the device files in order
(``File=/dev/nvidia[0-7]``, as Slurm's autodetection writes it) and the exporter's index is
the device's minor number — an assumption the README and the card page state. A node or
index the inventory lacks, or an index two cards share, is not attributed and counted
(``last_unattributed``), never guessed.
Jobs whose account has no tenant mapping never get here: the sync refuses them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime

from django.utils.translation import gettext as _

from inventory.models import Accelerator, Node
from scheduling.models import JOB_HOLDING_STATES, SchedulerJob, SchedulerSource
from telemetry.ingest.scheduler_attribution import (
    SchedulerAttributionResult,
    SchedulerHolding,
    scheduler_intervals_sync,
)

HOLDING_STATES = JOB_HOLDING_STATES
MAX_REASONS_KEPT = 20


def _node_ids(cluster_id: int) -> dict[str, int]:
    """Host name → inventory node, also by short name where that is unambiguous (Slurm
    names nodes ``gpu-001``; an inventory may say ``gpu-001.example.com``)."""
    rows = list(Node.objects.filter(cluster_id=cluster_id).values_list("hostname", "pk"))
    short = Counter(name.split(".")[0] for name, _pk in rows)
    found = {name.split(".")[0]: pk for name, pk in rows if short[name.split(".")[0]] == 1}
    found.update(dict(rows))
    return found


def _family(vendor: str | None, model_name: str, vendor_id: str) -> str:
    """``npu`` (Ascend), ``gpu`` (anything else identified), or ``""`` when the inventory
    says nothing about the card. Slurm numbers each GRES name from 0 (a node with
    ``gpu:h100:4,npu:910b:4`` has a gpu 0 and an npu 0), so the name picks the family."""
    text = f"{vendor or ''} {model_name}".lower()
    if "huawei" in text or "ascend" in text or "910" in text:
        return "npu"
    if text.strip() or vendor_id.startswith(("GPU-", "MIG-")):
        return "gpu"
    return ""


def _gres_family(name: str) -> str:
    return "npu" if name.lower() in ("npu", "ascend", "davinci") else "gpu"


def _cards_by_index(cluster_id: int) -> dict[tuple[int, int], list[tuple[int, str]]]:
    cards: dict[tuple[int, int], list[tuple[int, str]]] = defaultdict(list)
    rows = Accelerator.objects.filter(
        node__cluster_id=cluster_id, parent__isnull=True, index__isnull=False
    ).values_list("node_id", "index", "pk", "hardware_model__vendor", "model_name", "vendor_id")
    for node_id, index, pk, vendor, model_name, vendor_id in rows:
        cards[(node_id, index)].append((pk, _family(vendor, model_name, vendor_id)))
    return cards


def _holdings(jobs, nodes, cards, reasons: Counter, now: datetime) -> list[SchedulerHolding]:
    """Each job's allocated cards joined to inventory cards; what cannot be joined is counted
    in ``reasons``."""
    holdings = []
    for job_id, tenant_id, allocation, start_time in jobs:
        for per_node in allocation or []:
            node_id = nodes.get(per_node.get("node", ""))
            for gres in per_node.get("cards", []):
                for index in gres.get("indices", []):
                    if node_id is None:
                        reason = _("node %(node)s is not in the inventory") % {
                            "node": per_node.get("node", "")
                        }
                        reasons[reason] += 1
                        continue
                    family = _gres_family(gres.get("name", ""))
                    found = [
                        pk for pk, kind in cards.get((node_id, index), []) if kind in (family, "")
                    ]
                    if len(found) != 1:
                        reason = (
                            _("%(node)s has no %(gres)s card with index %(index)s")
                            if not found
                            else _("%(node)s has several %(gres)s cards with index %(index)s")
                        ) % {"node": per_node["node"], "gres": family, "index": index}
                        reasons[reason] += 1
                        continue
                    holdings.append(
                        SchedulerHolding(
                            accelerator_id=found[0],
                            job=str(job_id),
                            tenant_id=tenant_id,
                            host=per_node["node"],
                            started_at=start_time or now,
                        )  # fmt: skip
                    )
    return holdings


def scheduler_attribution_sync(
    *, source: SchedulerSource, now: datetime
) -> tuple[SchedulerAttributionResult, dict[str, int]]:
    """Write the source's current allocations as scheduler intervals (in the caller's
    transaction); answer what changed and the cards not attributed, counted by reason."""
    held = list(
        SchedulerJob.objects.filter(source=source, state__in=HOLDING_STATES).values_list(
            "job_id", "tenant_id", "allocation", "start_time"
        )
    )
    # Ended jobs this sync reported (stored with synced_at = now) that held cards: a job that
    # started and ended between two syncs still gets its (closed) intervals.
    finished_jobs = list(
        SchedulerJob.objects.filter(
            source=source, synced_at=now, start_time__isnull=False, end_time__isnull=False
        )
        .exclude(state__in=HOLDING_STATES)
        .exclude(allocation=[])
        .values_list("job_id", "tenant_id", "allocation", "start_time")
    )
    nodes = _node_ids(source.cluster_id)
    cards = _cards_by_index(source.cluster_id)
    reasons: Counter = Counter()
    holdings = _holdings(held, nodes, cards, reasons, now)
    finished = _holdings(finished_jobs, nodes, cards, Counter(), now)
    ends = {
        str(job_id): end
        for job_id, end in SchedulerJob.objects.filter(source=source, end_time__isnull=False)
        .exclude(state__in=HOLDING_STATES)
        .values_list("job_id", "end_time")
    }
    result = scheduler_intervals_sync(
        cluster_id=source.cluster_id, holdings=holdings, ends=ends, now=now, finished=finished
    )
    if result.untracked:
        reasons[_("cards no exporter has reported yet")] += result.untracked
    return result, dict(reasons.most_common(MAX_REASONS_KEPT))
