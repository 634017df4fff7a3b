"""Kubernetes objects → the sync's job, node and partition records (the same records the
Slurm normalisers return, so storage, tenancy and attribution are one code path).

* A **Pod** is a job: its id is a stable integer from the pod's UID (the first 60 bits), its
  account its namespace, or ``<namespace>/<LocalQueue>`` when a Kueue Workload owns it (the
  tenancy mapping then names the LocalQueue; an unmapped one is refused, never guessed). Its
  partition is the Workload's ClusterQueue, else its Volcano PodGroup's queue, else
  ``default``. Cards are the containers' limits of ``nvidia.com/gpu`` (GPUs) and
  ``huawei.com/Ascend*`` (NPUs), summed, or the largest init container's when that is more
  (Kubernetes reserves the larger of the two). The phase becomes a Slurm-style state so the
  queue, showback and attribution code read both alike.
* A Kueue **Workload** no pod belongs to yet (a suspended Job waiting for quota) is a pending
  job of its own, with the cards its pod sets ask for.
* Which card a pod holds is not in the API (the kubelet's pod-resources socket knows it);
  only Huawei's Ascend device plugin writes it on the pod (annotation
  ``huawei.com/Ascend910: Ascend910-0,Ascend910-1``), and that becomes the allocation.
* ClusterQueues and Volcano Queues are partitions; their card quotas (a ClusterQueue's
  ``nominalQuota`` and ``borrowingLimit`` summed over its flavours, with the use Kueue counts
  against them; a Volcano Queue's ``capability``, with its ``status.allocated`` where the
  Volcano release reports it) become queue quotas.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from django.utils.translation import gettext as _
from kubernetes import client as k8s
from kubernetes.utils import parse_quantity

from scheduling.kubernetes.client import ClusterAnswer
from scheduling.slurm.v0_0_38 import JobRecord, NodeRecord, PartitionRecord, QuotaRecord

GPU_RESOURCES = ("nvidia.com/gpu",)
NPU_PREFIX = "huawei.com/Ascend"
DEFAULT_PARTITION = "default"
PHASE_STATES = {
    "Pending": "PENDING",
    "Running": "RUNNING",
    "Succeeded": "COMPLETED",
    "Failed": "FAILED",
    "Unknown": "UNKNOWN",
}
FINAL_STATES = ("COMPLETED", "FAILED")
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
VOLCANO_QUEUE = "volcano.sh/queue-name"
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
_ASCEND_DEVICE = re.compile(r"^Ascend[0-9A-Za-z]*-(\d+)$")


class AnswerError(ValueError):
    """An object lacks what every real one has (a pod without a UID, a node without a name)."""


def job_id_from_uid(uid: str) -> int:
    """A stable positive 60-bit integer from a Kubernetes UID (a UUID)."""
    digits = (uid or "").replace("-", "")
    if len(digits) < 15 or not re.fullmatch(r"[0-9a-fA-F]+", digits):
        raise AnswerError(_("An object whose uid %(uid)r is not a UUID.") % {"uid": uid})
    return int(digits[:15], 16)


def _quantity(value: object) -> int:
    """Whole cards from a resource quantity (extended resources are integers: "2")."""
    try:
        return max(int(str(value)), 0)
    except ValueError:
        return 0


def _cards(resources: dict | None) -> tuple[int, int]:
    gpus = npus = 0
    for name, value in (resources or {}).items():
        if name in GPU_RESOURCES:
            gpus += _quantity(value)
        elif name.startswith(NPU_PREFIX):
            npus += _quantity(value)
    return gpus, npus


def _container_cards(container) -> tuple[int, int]:
    resources = container.resources
    if resources is None:
        return 0, 0
    # Extended resources need a limit; a request, when given, must equal it.
    return _cards(resources.limits or resources.requests)


def pod_cards(spec: k8s.V1PodSpec | None) -> tuple[int, int]:
    """(GPUs, NPUs) the pod reserves: the containers' sum, or the largest init container."""
    if spec is None:
        return 0, 0
    main = [_container_cards(c) for c in spec.containers or []]
    init = [_container_cards(c) for c in spec.init_containers or []]
    gpus, npus = sum(g for g, _n in main), sum(n for _g, n in main)
    return max([gpus, *(g for g, _n in init)]), max([npus, *(n for _g, n in init)])


def _ascend_allocation(pod: k8s.V1Pod) -> list[dict]:
    annotations = pod.metadata.annotations or {}
    indices = []
    for name, value in annotations.items():
        if name.startswith(NPU_PREFIX) and isinstance(value, str):
            for device in value.split(","):
                if m := _ASCEND_DEVICE.match(device.strip()):
                    indices.append(int(m.group(1)))
    if not indices or not pod.spec or not pod.spec.node_name:
        return []
    card = {"name": "npu", "type": "ascend", "indices": sorted(set(indices))}
    return [{"node": pod.spec.node_name, "cards": [card]}]


def _meta(obj: dict) -> dict:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _spec(obj: dict) -> dict:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _status(obj: dict) -> dict:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def _condition(obj: dict, kind: str) -> dict | None:
    for condition in _status(obj).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition
    return None


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


class _Queues:
    """Kueue and Volcano objects, indexed the way pods find them."""

    def __init__(self, custom: dict[str, list[dict]]) -> None:
        self.local_queues = {
            (_meta(q).get("namespace"), _meta(q).get("name")): _spec(q).get("clusterQueue", "")
            for q in custom.get("local_queues", [])
        }
        # A Workload is owned by the Job (or the plain Pod) it admits.
        self.workloads: dict[str, dict] = {}
        for workload in custom.get("workloads", []):
            for owner in _meta(workload).get("ownerReferences") or []:
                if isinstance(owner, dict) and owner.get("uid"):
                    self.workloads[owner["uid"]] = workload
        self.pod_groups = {
            (_meta(g).get("namespace"), _meta(g).get("name")): _spec(g).get("queue", "")
            for g in custom.get("pod_groups", [])
        }

    def workload_of(self, pod: k8s.V1Pod) -> dict | None:
        uids = [pod.metadata.uid] + [o.uid for o in pod.metadata.owner_references or []]
        return next((self.workloads[u] for u in uids if u in self.workloads), None)

    def cluster_queue(self, workload: dict) -> str:
        admission = _status(workload).get("admission")
        if isinstance(admission, dict) and isinstance(admission.get("clusterQueue"), str):
            return admission["clusterQueue"]
        key = (_meta(workload).get("namespace"), _spec(workload).get("queueName"))
        return self.local_queues.get(key) or ""

    def account(self, namespace: str, workload: dict | None, labels: dict) -> str:
        queue = (_spec(workload).get("queueName") if workload else None) or labels.get(KUEUE_QUEUE)
        return f"{namespace}/{queue}" if isinstance(queue, str) and queue else namespace

    def partition(self, pod: k8s.V1Pod, workload: dict | None) -> str:
        if workload is not None and (queue := self.cluster_queue(workload)):
            return queue
        annotations = pod.metadata.annotations or {}
        group = annotations.get(VOLCANO_GROUP)
        queue = self.pod_groups.get((pod.metadata.namespace, group)) if group else None
        return queue or annotations.get(VOLCANO_QUEUE) or DEFAULT_PARTITION


def _pending_reason(pod: k8s.V1Pod) -> str:
    if pod.spec and pod.spec.scheduling_gates:
        return _("gated: %(gates)s") % {
            "gates": ", ".join(g.name for g in pod.spec.scheduling_gates)
        }
    for condition in (pod.status.conditions if pod.status else None) or []:
        if condition.type == "PodScheduled" and condition.status == "False":
            return condition.reason or condition.message or ""
    for status in (pod.status.container_statuses if pod.status else None) or []:
        if status.state and status.state.waiting:
            return status.state.waiting.reason or ""
    return ""


def _status_reason(pod: k8s.V1Pod) -> str:
    return (pod.status.reason if pod.status else None) or ""


def _finished_at(pod: k8s.V1Pod) -> datetime | None:
    statuses = (pod.status.container_statuses or []) if pod.status else []
    ends = [
        s.state.terminated.finished_at
        for s in statuses
        if s.state and s.state.terminated and s.state.terminated.finished_at
    ]
    return max(ends) if ends else None


def pod_job(pod: k8s.V1Pod, queues: _Queues) -> JobRecord:
    """One pod as a job; :class:`AnswerError` when it has no UID, namespace or name."""
    meta = pod.metadata
    if meta is None or not meta.uid or not meta.namespace or not meta.name:
        raise AnswerError(_("A pod without a uid, namespace or name."))
    workload = queues.workload_of(pod)
    phase = pod.status.phase if pod.status else None
    state = PHASE_STATES.get(phase or "", "UNKNOWN")
    if state == "RUNNING" and meta.deletion_timestamp is not None:
        state = "COMPLETING"  # terminating: its cards stay held until its containers stop
    gpus, npus = pod_cards(pod.spec)
    node = pod.spec.node_name if pod.spec else None
    record = JobRecord(
        job_id=job_id_from_uid(meta.uid),
        name=meta.name,
        account=queues.account(meta.namespace, workload, meta.labels or {}),
        user_name="",
        partition=queues.partition(pod, workload),
        state=state,
        state_reason=_pending_reason(pod)
        if state == "PENDING"
        else ((pod.status.reason if pod.status else "") or ""),
        nodes=[node] if node else [],
        gpus=gpus,
        npus=npus,
        submit_time=meta.creation_timestamp,
    )
    if state != "PENDING":
        record.start_time = pod.status.start_time
        record.allocation = _ascend_allocation(pod)
    if state in FINAL_STATES:
        record.end_time = _finished_at(pod)
    return record


def workload_job(workload: dict, queues: _Queues) -> JobRecord:
    """A Kueue Workload with no pod yet (its Job is suspended) as a pending job."""
    meta = _meta(workload)
    if not meta.get("uid") or not meta.get("namespace") or not meta.get("name"):
        raise AnswerError(_("A workload without a uid, namespace or name."))
    gpus = npus = 0
    for pod_set in _spec(workload).get("podSets") or []:
        template = pod_set.get("template") if isinstance(pod_set, dict) else None
        try:
            spec = k8s.ApiClient()._ApiClient__deserialize(_spec(template or {}), "V1PodSpec")
        except (ValueError, TypeError, AttributeError):
            raise AnswerError(_("Workload %(name)s has an unreadable pod set.") % meta) from None
        count = pod_set.get("count") if isinstance(pod_set.get("count"), int) else 1
        g, n = pod_cards(spec)
        gpus, npus = gpus + g * count, npus + n * count
    reserved = _condition(workload, "QuotaReserved") or {}
    return JobRecord(
        job_id=job_id_from_uid(meta["uid"]),
        name=meta["name"],
        account=queues.account(meta["namespace"], workload, {}),
        user_name="",
        partition=queues.cluster_queue(workload) or DEFAULT_PARTITION,
        state="PENDING",
        state_reason=str(reserved.get("message") or reserved.get("reason") or ""),
        nodes=[],
        gpus=gpus,
        npus=npus,
        submit_time=_parse_time(meta.get("creationTimestamp")),
    )


def _finished(workload: dict) -> bool:
    condition = _condition(workload, "Finished")
    return bool(condition and condition.get("status") == "True")


def jobs(answer: ClusterAnswer) -> tuple[list[JobRecord], list[tuple[int | None, str]]]:
    """Every pod (and pod-less, unfinished Workload) that reads, and (id, why) for the rest."""
    queues = _Queues(answer.custom)
    records, refused, claimed = [], [], set()
    for pod in answer.pods:
        try:
            record = pod_job(pod, queues)
        except AnswerError as exc:
            refused.append((None, str(exc)))
            continue
        records.append(record)
        if workload := queues.workload_of(pod):
            claimed.add(_meta(workload).get("uid"))
    for workload in answer.custom.get("workloads", []):
        if _meta(workload).get("uid") in claimed or _finished(workload):
            continue
        try:
            records.append(workload_job(workload, queues))
        except AnswerError as exc:
            refused.append((None, str(exc)))
    return records, refused


def _resource_text(resources: dict | None) -> str:
    return ",".join(
        f"{name}={value}"
        for name, value in sorted((resources or {}).items())
        if name in GPU_RESOURCES or name.startswith(NPU_PREFIX)
    )


def nodes(answer: ClusterAnswer, records: Iterable[JobRecord]) -> list[NodeRecord]:
    """Nodes with their allocatable cards (``gres``) and the cards running pods hold."""
    used: dict[str, list[int]] = {}
    for record in records:
        if record.state in ("RUNNING", "COMPLETING") and record.nodes:
            held = used.setdefault(record.nodes[0], [0, 0])
            held[0], held[1] = held[0] + record.gpus, held[1] + record.npus
    out = []
    for node in answer.nodes:
        if node.metadata is None or not node.metadata.name:
            raise AnswerError(_("A node without a name."))
        name = node.metadata.name
        ready = next(
            (
                c
                for c in (node.status.conditions if node.status else None) or []
                if c.type == "Ready"
            ),
            None,
        )
        state = "Ready" if ready is not None and ready.status == "True" else "NotReady"
        if node.spec and node.spec.unschedulable:
            state += ",SchedulingDisabled"
        gpus, npus = used.get(name, (0, 0))
        in_use = ",".join(t for t in (gpus and f"gpu={gpus}", npus and f"npu={npus}") if t)
        out.append(
            NodeRecord(
                name=name,
                state=state,
                gres=_resource_text(node.status.allocatable if node.status else None),
                gres_used=in_use,
                partitions=[],
                reason=(ready.message or "") if ready is not None and state != "Ready" else "",
            )  # fmt: skip
        )
    return out


def partitions(answer: ClusterAnswer, records: Iterable[JobRecord]) -> list[PartitionRecord]:
    """ClusterQueues and Volcano Queues (a name both use is one partition), and ``default``
    when a pod belongs to neither."""
    out: dict[str, PartitionRecord] = {}
    for queue in answer.custom.get("cluster_queues", []):
        name = _meta(queue).get("name")
        if not isinstance(name, str) or not name:
            raise AnswerError(_("A ClusterQueue without a name."))
        active = _condition(queue, "Active")
        state = "Active" if active and active.get("status") == "True" else "Inactive"
        out[name] = PartitionRecord(name=name, state=state, nodes=[])
    for queue in answer.custom.get("volcano_queues", []):
        name = _meta(queue).get("name")
        if not isinstance(name, str) or not name:
            raise AnswerError(_("A Volcano queue without a name."))
        state = _status(queue).get("state")
        out.setdefault(name, PartitionRecord(name=name, state=str(state or ""), nodes=[]))
    if any(r.partition == DEFAULT_PARTITION for r in records):
        out.setdefault(DEFAULT_PARTITION, PartitionRecord(DEFAULT_PARTITION, "", []))
    return list(out.values())


def _card_kind(resource: object) -> str | None:
    if resource in GPU_RESOURCES:
        return "gpus"
    if isinstance(resource, str) and resource.startswith(NPU_PREFIX):
        return "npus"
    return None


def _whole_cards(value: object, where: str) -> int:
    """A quota quantity as whole cards; anything else is an error naming it (a quota read as
    0 would be a wrong number, where the scheduler's own reading is unknown)."""
    try:
        quantity = parse_quantity(value)
    except (ValueError, TypeError):
        quantity = None
    if quantity is None or quantity < 0 or quantity != quantity.to_integral_value():
        raise AnswerError(
            _("%(where)s: %(value)r is not a whole number of cards.")
            % {"where": where, "value": value}
        )
    return int(quantity)


def _add(totals: dict[str, int], kind: str, cards: int) -> None:
    totals[kind] = totals.get(kind, 0) + cards


def _cluster_queue_quota(queue: dict, name: str) -> QuotaRecord | None:
    nominal: dict[str, int] = {}
    borrowing: dict[str, int] = {}
    unbounded: set[str] = set()  # a flavour with no borrowingLimit may borrow the cohort's all
    for group in _spec(queue).get("resourceGroups") or []:
        for flavor in (group.get("flavors") or []) if isinstance(group, dict) else []:
            for resource in (flavor.get("resources") or []) if isinstance(flavor, dict) else []:
                kind = _card_kind(resource.get("name")) if isinstance(resource, dict) else None
                if kind is None:
                    continue
                where = f"ClusterQueue {name} {resource['name']}"
                _add(nominal, kind, _whole_cards(resource.get("nominalQuota", 0), where))
                if resource.get("borrowingLimit") is None:
                    unbounded.add(kind)
                else:
                    _add(borrowing, kind, _whole_cards(resource["borrowingLimit"], where))
    if not nominal:
        return None
    used: dict[str, int] = {}
    for flavor in _status(queue).get("flavorsUsage") or []:
        for resource in (flavor.get("resources") or []) if isinstance(flavor, dict) else []:
            kind = _card_kind(resource.get("name")) if isinstance(resource, dict) else None
            if kind is not None:
                where = f"ClusterQueue {name} usage {resource['name']}"
                _add(used, kind, _whole_cards(resource.get("total", 0), where))
    return QuotaRecord(
        scope="queue", name=name, partition="", origin="kueue",
        gpus=nominal.get("gpus"), npus=nominal.get("npus"),
        gpus_borrowing_limit=None if "gpus" in unbounded else borrowing.get("gpus"),
        npus_borrowing_limit=None if "npus" in unbounded else borrowing.get("npus"),
        reported_gpus=used.get("gpus", 0 if "gpus" in nominal else None),
        reported_npus=used.get("npus", 0 if "npus" in nominal else None),
    )  # fmt: skip


def _volcano_queue_quota(queue: dict, name: str) -> QuotaRecord | None:
    capability: dict[str, int] = {}
    for resource, value in (_spec(queue).get("capability") or {}).items():
        if kind := _card_kind(resource):
            _add(capability, kind, _whole_cards(value, f"Volcano queue {name} {resource}"))
    if not capability:
        return None
    allocated = _status(queue).get("allocated")
    used: dict[str, int] = {}
    for resource, value in (allocated or {}).items() if isinstance(allocated, dict) else ():
        if kind := _card_kind(resource):
            _add(used, kind, _whole_cards(value, f"Volcano queue {name} allocated {resource}"))
    reported = isinstance(allocated, dict)  # older Volcano releases report no allocation
    return QuotaRecord(
        scope="queue", name=name, partition="", origin="volcano",
        gpus=capability.get("gpus"), npus=capability.get("npus"),
        reported_gpus=used.get("gpus", 0) if reported and "gpus" in capability else None,
        reported_npus=used.get("npus", 0) if reported and "npus" in capability else None,
    )  # fmt: skip


def quotas(answer: ClusterAnswer) -> list[QuotaRecord]:
    """Card quotas of the ClusterQueues and Volcano Queues that set one (a queue with no
    GPU/NPU quota limits nothing the portal counts and is left out)."""
    out: dict[str, QuotaRecord] = {}
    for queue in answer.custom.get("cluster_queues", []):
        if record := _cluster_queue_quota(queue, _meta(queue).get("name") or ""):
            out[record.name] = record
    for queue in answer.custom.get("volcano_queues", []):
        name = _meta(queue).get("name") or ""
        if name not in out and (record := _volcano_queue_quota(queue, name)):
            out[name] = record
    return list(out.values())
