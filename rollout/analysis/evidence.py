"""What a measurement counted, per source, and the audit row for a source it ignored.

Gates count only the evidence their criterion trusts (``telemetry.store.provenance``); approvers see
whose values decided (``Measurement.evidence`` and the reason), and the first time a run
ignores a source's values the plan's audit says so, once (a flood of pushes is not a flood of
audit rows). Split out of ``rollout.services.analysis`` to keep it readable.
"""

from __future__ import annotations

from django.utils import translation

from rollout.labels import reason_data, source_label
from rollout.models import Measurement, MigrationPlan
from rollout.services.audit import SYSTEM, audit_record
from telemetry.read import WindowAggregate


def evidence_of(*results: WindowAggregate) -> dict:
    """Counted and ignored values per source, summed over the reads of one measurement."""
    out: dict[str, dict[str, int]] = {"counted": {}, "ignored": {}}
    for result in results:
        for part, counts in (("counted", result.sources), ("ignored", result.ignored)):
            for source, n in counts.items():
                out[part][source] = out[part].get(source, 0) + n
    return {part: counts for part, counts in out.items() if counts}


def evidence_parts(evidence: dict) -> tuple[str, list[dict]]:
    """The evidence as English text for the reason, and as codes for the pages."""
    text, parts = "", []
    for part in ("counted", "ignored"):
        counts = evidence.get(part)
        if counts:
            with translation.override("en"):  # the stored text is English, like the rest
                listed = ", ".join(f"{source_label(s)} {n}" for s, n in counts.items())
            text += f"; {'counted' if part == 'counted' else 'ignored, untrusted'}: {listed}"
            parts.append(reason_data(f"evidence_{part}", sources=list(counts.items())))
    return text, parts


def reason_joined(first: dict, more: list[dict]) -> dict:
    """A reason code followed by the evidence parts, joined like the English text."""
    if not more:
        return first
    return {"parts": [first, *more], "joiner": "; "}


def evidence_ignored_audit(measurement: Measurement, plan: MigrationPlan, ignored: dict) -> None:
    """One audit row per run and untrusted source, the first time it shows up in a window:
    what was pushed into the gate's evidence and ignored (later windows only count it)."""
    metric = measurement.result
    others = Measurement.objects.filter(result__run_id=metric.run_id).exclude(pk=measurement.pk)
    seen = {s for e in others.values_list("evidence", flat=True) for s in e.get("ignored", {})}
    for source, count in ignored.items():
        if source in seen:
            continue
        target = f"{metric.spec['entity_kind']} {metric.spec['entity_key']}"
        with translation.override("en"):
            shown = source_label(source)
        audit_record(
            actor=SYSTEM,
            action="evidence_ignored",
            plan=plan,
            obj=metric.run.gate,
            reason=(
                f"{count} values of {metric.spec['metric']} for {target} from {shown} ignored "
                f"by criterion {metric.name}: not a source it trusts"
            ),
            reason_data=reason_data(
                "evidence_ignored_audit",
                count=count,
                metric=metric.spec["metric"],
                target=target,
                source=source,
                criterion=metric.name,
            ),
        )
