"""Shared set-up for the scheduler attribution and idle tests: a Slurm-fed cluster whose two
nodes have four inventory cards each (with telemetry entities), two account mappings, and
scheduler answers stored through the sync's own write path (no slurmrestd needed)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

from inventory.models import Accelerator, Cluster, Node
from scheduling.models import SchedulerSource
from scheduling.services.sources import scheduler_account_mapping_create, scheduler_source_create
from scheduling.services.sync import SyncResult, _store
from scheduling.slurm.v0_0_38 import JobRecord
from telemetry.models import Entity
from tests.factories import EntityFactory


@dataclass
class Site:
    cluster: Cluster
    source: SchedulerSource
    cards: dict[tuple[str, int], Accelerator]
    entities: dict[tuple[str, int], Entity]


def site(tenants, name: str = "slurm-a") -> Site:
    cluster = Cluster.objects.create(name=name)
    scheduler_account_mapping_create(cluster=cluster, account="tenant-a", tenant=tenants["acme"])
    scheduler_account_mapping_create(cluster=cluster, account="tenant-b", tenant=tenants["panda"])
    source = scheduler_source_create(
        cluster=cluster, base_url="http://slurm-head.example.com:6820", user_name="slurmrest",
        token_env="SLURM_JWT_TEST", enabled=False,
    )  # fmt: skip
    cards, entities = {}, {}
    for host in ("gpu-001", "gpu-002"):
        node = Node.objects.create(cluster=cluster, hostname=host)
        for index in range(4):
            card = Accelerator.objects.create(
                node=node, index=index, vendor_id=f"GPU-{name}-{host}-{index}", model_name="H100"
            )
            cards[(host, index)] = card
            entities[(host, index)] = EntityFactory(
                cluster=cluster, key=f"{host}/gpu{index}", accelerator=card
            )
    return Site(cluster, source, cards, entities)


def job(
    job_id: int, *, account: str = "tenant-a", state: str = "RUNNING",
    cards: dict[str, list[int]] | None = None, start: datetime | None = None,
    end: datetime | None = None,
) -> JobRecord:  # fmt: skip
    """A job as the v0.0.38 normaliser returns it; ``cards`` maps node → GRES indices."""
    cards = cards or {}
    allocation = [
        {"node": node, "cards": [{"name": "gpu", "type": "h100", "indices": indices}]}
        for node, indices in cards.items()
    ]
    return JobRecord(
        job_id=job_id, name=f"job-{job_id}", account=account, user_name="alice",
        partition="train", state=state, state_reason="None", nodes=list(cards),
        allocation=allocation, gpus=sum(len(i) for i in cards.values()), start_time=start,
        end_time=end, submit_time=start,
    )  # fmt: skip


def store(source: SchedulerSource, jobs: list[JobRecord] | None, now: datetime) -> SyncResult:
    """Store one scheduler answer (``None``: slurmrestd said 304) as a sync would."""
    return _store(source, "v0.0.38", int(time.time()), jobs, [], [], [], [], now)
