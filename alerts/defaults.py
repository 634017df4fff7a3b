"""The alert rules the portal ships with, and the idempotent service that installs them.

Thresholds are starting points an operator tunes. They were checked against a day of the
digital twin's default 1,024-card scenario so that a healthy run raises nothing but the
informational communication-share rule for jobs that span racks (which is a real finding
against the fabric's ≤ 15% design target).

Titles and runbooks are stored in English and marked with ``gettext_noop`` so that
``makemessages`` extracts them; pages translate them at display time (``{% translate %}``
on the stored text), which also leaves operator-edited text shown exactly as written.

Metric names are strings on purpose: monitoring must not import the simulation package.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils.translation import gettext_noop

from alerts.models import AlertRule, Severity

Agg = AlertRule.Aggregation
Cmp = AlertRule.Comparator


@dataclass(frozen=True)
class RuleSpec:
    """One default rule: ``aggregation(metric over window) comparator threshold``."""

    name: str
    title: str
    metric: str
    entity_kind: str
    aggregation: str
    comparator: str
    threshold: float
    window_seconds: int
    severity: str
    runbook: str


# Field playbooks the runbooks follow (shared wording keeps hints consistent).
_ALLOCATION = gettext_noop(
    "Allocation failures: check fragmentation first (external fragmentation strands free HBM "
    "on allocated cards; internal fragmentation wastes KV blocks), then the pre-allocation "
    "parameters (KV block size, reserved fraction, max sequences per replica), then the "
    "CXL/UB link state of the supernode — a degraded link shrinks the pool that can be lent."
)
_PERFORMANCE = gettext_noop(
    "Performance drop: look for hot-spot access patterns (a few replicas or prefixes taking "
    "most requests, uneven KV hit ratio), check prefetch settings for offloaded KV, and the "
    "NUMA binding of host threads to the cards they feed."
)
_LATENCY = gettext_noop(
    "High network latency: check optical module health (Rx power, CRC/FEC errors) on the "
    "affected link, the routing table after any reroute, and congestion on rack uplinks."
)

DEFAULT_RULES: tuple[RuleSpec, ...] = (
    # --- unified memory pool (one entity per supernode) -------------------------------------
    RuleSpec(
        name="hbm-allocation-failures",
        title=gettext_noop("HBM allocation failures in the memory pool"),
        metric="memory_pool_allocation_failures_per_second",
        entity_kind="memory_pool",
        aggregation=Agg.MEAN,
        comparator=Cmp.GT,
        # Any sustained failure means requests are turned away for lack of KV blocks.
        threshold=0.0,
        window_seconds=300,
        severity=Severity.CRITICAL,
        runbook=_ALLOCATION,
    ),
    RuleSpec(
        name="memory-pool-external-fragmentation",
        title=gettext_noop("Memory pool external fragmentation high"),
        metric="memory_pool_external_fragmentation_ratio",
        entity_kind="memory_pool",
        aggregation=Agg.MEAN,
        comparator=Cmp.GT,
        threshold=0.5,  # half the free HBM stranded; the twin's day stays below 0.02
        window_seconds=600,
        severity=Severity.WARNING,
        runbook=_ALLOCATION,
    ),
    RuleSpec(
        name="memory-pool-internal-fragmentation",
        title=gettext_noop("KV blocks mostly empty (internal fragmentation)"),
        metric="memory_pool_internal_fragmentation_ratio",
        entity_kind="memory_pool",
        aggregation=Agg.MEAN,
        comparator=Cmp.GT,
        threshold=0.25,
        window_seconds=900,
        severity=Severity.INFO,
        runbook=_ALLOCATION,
    ),
    # --- links (rack uplinks) ---------------------------------------------------------------
    RuleSpec(
        name="link-down",
        title=gettext_noop("Link down"),
        metric="link_status",
        entity_kind="link",
        aggregation=Agg.LAST,
        comparator=Cmp.LT,
        threshold=0.5,  # 1 up, 0 down
        window_seconds=180,
        severity=Severity.CRITICAL,
        runbook=gettext_noop(
            "Link down: check the optical module (seated, Rx/Tx power, temperature) and the "
            "fibre, confirm traffic was rerouted (self-healing should finish in under a "
            "minute), then verify the routing table no longer points at the failed port."
        ),
    ),
    RuleSpec(
        name="link-rerouting-slow",
        title=gettext_noop("Link degraded: rerouting for over a minute"),
        metric="link_rerouting_status",
        entity_kind="link",
        # min = 1 over two minutes: rerouting the whole time, slower than the < 1 min target.
        aggregation=Agg.MIN,
        comparator=Cmp.GE,
        threshold=1.0,
        window_seconds=120,
        severity=Severity.WARNING,
        runbook=_LATENCY,
    ),
    RuleSpec(
        name="link-congested",
        title=gettext_noop("Link degraded: sustained high utilization"),
        metric="link_utilization_ratio",
        entity_kind="link",
        aggregation=Agg.MEAN,
        comparator=Cmp.GT,
        threshold=0.85,
        window_seconds=300,
        severity=Severity.WARNING,
        runbook=_LATENCY,
    ),
    # --- accelerators: thermal and power ----------------------------------------------------
    RuleSpec(
        name="accelerator-temperature-high",
        title=gettext_noop("Accelerator running hot"),
        metric="accelerator_temperature_celsius",
        entity_kind="accelerator",
        aggregation=Agg.MEAN,
        comparator=Cmp.GT,
        threshold=85.0,  # H100-class parts start clock throttling in the high 80s °C
        window_seconds=300,
        severity=Severity.WARNING,
        runbook=gettext_noop(
            "Thermal: compare with neighbouring cards in the node — one hot card points at "
            "the card (thermal interface, fan or cold plate), a hot node or rack at cooling "
            "(inlet temperature, coolant flow, blocked airflow). Expect clock throttling and a "
            "performance drop on this card; consider draining it."
        ),
    ),
    RuleSpec(
        name="accelerator-temperature-critical",
        title=gettext_noop("Accelerator at thermal limit"),
        metric="accelerator_temperature_celsius",
        entity_kind="accelerator",
        aggregation=Agg.MAX,
        comparator=Cmp.GT,
        threshold=95.0,
        window_seconds=120,
        severity=Severity.CRITICAL,
        runbook=gettext_noop(
            "Thermal limit: drain the card now (checkpoint training, fail over inference "
            "replicas) before the hardware shuts it down, then check cooling of the node "
            "and rack: inlet temperature, coolant flow, fans."
        ),
    ),
    RuleSpec(
        name="accelerator-power-over-limit",
        title=gettext_noop("Accelerator power above TDP"),
        metric="accelerator_power_watts",
        entity_kind="accelerator",
        aggregation=Agg.MEAN,
        comparator=Cmp.GT,
        # One threshold for every model: the highest TDP in the catalogue (950DT, 800 W
        # assumed) plus 2.5%. Lower it for clusters of 400 W-class cards.
        threshold=820.0,
        window_seconds=300,
        severity=Severity.WARNING,
        runbook=gettext_noop(
            "Power: sustained draw above TDP means the power cap is not enforced — check the "
            "card's power limit setting and firmware, the node's PSU headroom and the rack's "
            "power budget; expect throttling when the facility limit is hit."
        ),
    ),
    RuleSpec(
        name="accelerator-unhealthy",
        title=gettext_noop("Accelerator unhealthy or health unknown"),
        metric="accelerator_health_status",
        entity_kind="accelerator",
        aggregation=Agg.LAST,
        comparator=Cmp.LT,
        threshold=0.5,  # 1 healthy, 0 unhealthy, -1 unknown
        window_seconds=300,
        severity=Severity.WARNING,
        runbook=gettext_noop(
            "Health: read the device's error log (XID for NVIDIA, npu-smi for Ascend), check "
            "that workloads on the card failed over or restarted from checkpoint, and isolate "
            "the card if errors repeat."
        ),
    ),
    # --- workloads: SLO burn and training communication -------------------------------------
    # Attainment is the share of requests meeting both the TTFT and the TPOT target (the
    # operator's, per service), so the burn rules follow the headline latency figures.
    RuleSpec(
        name="slo-fast-burn",
        # "90% of" is not a format directive: the title is never %-formatted.
        # xgettext:no-python-format
        title=gettext_noop("SLO burning fast: under 90% of requests meet TTFT and TPOT targets"),
        metric="inference_slo_attainment_ratio",
        entity_kind="workload",
        aggregation=Agg.MEAN,
        comparator=Cmp.LT,
        threshold=0.90,
        window_seconds=300,
        severity=Severity.CRITICAL,
        runbook=gettext_noop(
            "SLO burn: first see which target is missed — TTFT P99 (queueing or prefill: "
            "capacity, queue backlog, long prompts) or TPOT P99 (decode: batch too large for "
            "the TPOT target, KV cache pressure). If a gray migration step just raised this "
            "workload's traffic share, roll the step back first. Then performance: look for "
            "hot-spot access patterns "
            "(a few replicas or prefixes taking most requests), prefetch settings for "
            "offloaded KV and the NUMA binding of host threads; then capacity: replicas "
            "against demand and how fast training is preempted to make room."
        ),
    ),
    RuleSpec(
        name="slo-slow-burn",
        title=gettext_noop("SLO burning: under 99% meet TTFT and TPOT targets, 1-hour window"),
        metric="inference_slo_attainment_ratio",
        entity_kind="workload",
        aggregation=Agg.MEAN,
        comparator=Cmp.LT,
        threshold=0.99,
        window_seconds=3600,
        severity=Severity.WARNING,
        runbook=_PERFORMANCE,
    ),
    RuleSpec(
        name="inference-queue-backlog",
        title=gettext_noop("Requests queuing beyond capacity for 5 minutes"),
        metric="inference_queue_backlog_requests",
        entity_kind="workload",
        # min > 0: a backlog at every sample of the window, i.e. demand above capacity the
        # whole time (a healthy service drains its queue within a step).
        aggregation=Agg.MIN,
        comparator=Cmp.GT,
        threshold=0.0,
        window_seconds=300,
        severity=Severity.CRITICAL,
        runbook=gettext_noop(
            "Saturation: arrivals exceed what the replicas serve, so the queue grows step over "
            "step, TTFT rises without bound and requests time out (inference_timeouts_total). "
            "Check that the autoscaler is adding replicas and is not blocked by training that "
            "cannot be preempted, the traffic share of any gray migration step, and a burst in "
            "the arrival rate; shed or reroute load if capacity cannot follow."
        ),
    ),
    RuleSpec(
        name="training-communication-high",
        title=gettext_noop("Training communication over 15 percent of step time"),
        metric="training_communication_ratio",
        entity_kind="workload",
        aggregation=Agg.MEAN,
        comparator=Cmp.GT,
        threshold=0.15,  # the fabric's reference design target: communication ≤ 15%
        window_seconds=900,
        severity=Severity.INFO,
        runbook=gettext_noop(
            "Low throughput: a job spanning racks or supernodes pays the uplinks — check its "
            "placement first; then MTU consistency end to end, flow control (PFC/ECN pauses "
            "and drops) and PCIe bandwidth between host and cards (link width and generation)."
        ),
    ),
    # --- the portal's own feeds -------------------------------------------------------------
    RuleSpec(
        name="twin-tick-lag",
        title=gettext_noop("Digital twin falling behind"),
        metric="twin_tick_lag_seconds",
        entity_kind="cluster",
        aggregation=Agg.LAST,
        comparator=Cmp.GT,
        threshold=120.0,
        window_seconds=300,
        severity=Severity.WARNING,
        runbook=gettext_noop(
            "Tick lag: check that Celery workers are alive (status page), the queue is not "
            "backed up behind slow tasks, and ticks are not failing (worker log); a large "
            "cluster may need a lower speed (fewer simulated steps per tick)."
        ),
    ),
    RuleSpec(
        name="exporter-scrape-failing",
        title=gettext_noop("Exporter scrape failing"),
        metric="exporter_scrape_up",
        entity_kind="exporter",
        aggregation=Agg.LAST,
        comparator=Cmp.LT,
        threshold=0.5,  # 1 scraped, 0 failed
        window_seconds=300,
        severity=Severity.WARNING,
        runbook=gettext_noop(
            "Scrape failure: open the target's last error in admin; check the exporter "
            "process (dcgm-exporter, npu-exporter on port 8082) is running, the host is "
            "reachable from the workers (firewall, DNS), and the URL and port are right. "
            "Dashboards for that host go stale until it recovers."
        ),
    ),
    RuleSpec(
        name="accelerator-absent",
        title=gettext_noop("Accelerator absent: its exporter stopped reporting it"),
        metric="accelerator_absence_ratio",  # telemetry.read.ABSENCE_METRIC
        entity_kind="accelerator",
        aggregation=Agg.LAST,
        comparator=Cmp.GE,
        threshold=1.0,  # scrape intervals missed ÷ the cluster's "absent after" intervals
        window_seconds=60,
        severity=Severity.CRITICAL,
        runbook=gettext_noop(
            "Absent card: the value is scrape intervals missed divided by the cluster's "
            "'absent after' setting. One card absent while its neighbours report: the GPU fell "
            "off the bus or the driver lost it (XID 79; check dmesg, nvidia-smi or npu-smi), or "
            "the chip moved host (see accelerator moves). A whole node absent: the exporter or "
            "the node is down, or Prometheus stopped scraping it."
        ),
    ),
    RuleSpec(
        name="accelerator-allocated-idle",
        title=gettext_noop("Allocated but idle: a scheduler job holds a card that does nothing"),
        metric="accelerator_allocated_idle_seconds",  # telemetry.read.ALLOCATED_IDLE_METRIC
        entity_kind="accelerator",
        aggregation=Agg.MAX,
        comparator=Cmp.LT,
        threshold=0.05,  # utilization ratio: every reading under 5 % (SCHEDULER_IDLE_*'s default)
        window_seconds=1800,  # for at least 30 minutes
        severity=Severity.WARNING,
        runbook=gettext_noop(
            "Allocated but idle: the scheduler says a job holds this card, the exporter says it "
            "computes nothing. Open the scheduler page's idle list for the job and its tenant: "
            "a job waiting on data or a stuck rank (check the job's logs and its other cards), "
            "an interactive session left open, or an inference replica sized for a peak. Ask "
            "the holder to release or shrink it; the idle time is charged to the holder as "
            "allocated idle in the cost ledger."
        ),
    ),
)


@transaction.atomic
def alert_rules_ensure(rules: tuple[RuleSpec, ...] = DEFAULT_RULES) -> dict[str, int]:
    """Create missing default rules and refresh the shipped text of existing ones.

    Safe to run any number of times (it runs after every ``migrate``). Only ``title`` and
    ``runbook`` are refreshed on existing rules: the condition, severity and ``enabled`` are
    operator-tunable, and a deploy must not silently undo an operator's tuning.
    """
    existing = {
        rule.name: rule for rule in AlertRule.objects.filter(name__in=[r.name for r in rules])
    }
    created = updated = 0
    for spec in rules:
        rule = existing.get(spec.name)
        if rule is None:
            AlertRule.objects.create(
                name=spec.name,
                title=spec.title,
                metric=spec.metric,
                entity_kind=spec.entity_kind,
                aggregation=spec.aggregation,
                comparator=spec.comparator,
                threshold=spec.threshold,
                window_seconds=spec.window_seconds,
                severity=spec.severity,
                runbook=spec.runbook,
            )
            created += 1
        elif (rule.title, rule.runbook) != (spec.title, spec.runbook):
            rule.title, rule.runbook = spec.title, spec.runbook
            rule.save(update_fields=["title", "runbook"])
            updated += 1
    return {"created": created, "updated": updated}


def alert_rules_ensure_after_migrate(**_: object) -> None:
    """``post_migrate`` receiver."""
    alert_rules_ensure()
