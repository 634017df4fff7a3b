"""Human labels for the workflow's stored codes, rendered in the reader's language.

Imports no model (models use it for their ``*_display`` properties): vocabularies that live on
the models (states, outcomes) are passed in by the caller.

The audit trail and the analysis results store machine codes (``approve``, ``awaiting_approval``,
``gate``) and, for reasons the portal itself writes, a code with parameters
(``{"code": "compare", "params": {...}}``) next to the English sentence. Pages translate at
display time from those codes, so one stored row reads in English and in Chinese; rows written
before the codes existed, and reasons people typed, show their stored text unchanged.
"""

from __future__ import annotations

from django.utils.functional import lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext_lazy

ACTIONS = {
    "create": pgettext_lazy("audit action", "create"),
    "start": pgettext_lazy("audit action", "start"),
    "promote": pgettext_lazy("audit action", "request promotion"),
    "approve": pgettext_lazy("audit action", "approve"),
    "reject": pgettext_lazy("audit action", "reject"),
    "pause": pgettext_lazy("audit action", "pause"),
    "resume": pgettext_lazy("audit action", "resume"),
    "abort": pgettext_lazy("audit action", "abort"),
    "retry": pgettext_lazy("audit action", "retry analysis"),
    "skip": pgettext_lazy("audit action", "skip analysis"),
    "force_promote": pgettext_lazy("audit action", "force-promote"),
    "force_promote_vote": pgettext_lazy("audit action", "force-promote vote"),
    "rollback": pgettext_lazy("audit action", "roll back"),
    "analysis_successful": pgettext_lazy("audit action", "analysis successful"),
    "analysis_inconclusive": pgettext_lazy("audit action", "analysis inconclusive"),
    "criterion_add": pgettext_lazy("audit action", "add criterion"),
    "criterion_delete": pgettext_lazy("audit action", "delete criterion"),
    "criterion_change": pgettext_lazy("audit action", "change criterion"),
    "manual_gate_off": pgettext_lazy("audit action", "end manual gate"),
    "criterion_move": pgettext_lazy("audit action", "move criterion to another gate"),
    "evidence_ignored": pgettext_lazy("audit action", "untrusted evidence ignored"),
    "manual_gate_on": pgettext_lazy("audit action", "make gate manual"),
    "router_set": pgettext_lazy("audit action", "router: set share"),
    "router_restore": pgettext_lazy("audit action", "router: restore source"),
    "router_callback": pgettext_lazy("audit action", "router: callback"),
    "router_failed": pgettext_lazy("audit action", "router failed"),
    "router_confirmed": pgettext_lazy("audit action", "router confirmed rollback"),
    "verify_rollback": pgettext_lazy("audit action", "verify rollback"),
    "router_choose": pgettext_lazy("audit action", "choose traffic router"),
    "router_create": pgettext_lazy("audit action", "create traffic router"),
    "router_update": pgettext_lazy("audit action", "change traffic router"),
    "router_delete": pgettext_lazy("audit action", "delete traffic router"),
    "override": pgettext_lazy("audit action", "request promotion past the analysis (override)"),
    "approve_override": pgettext_lazy("audit action", "approve override"),
    "reanalyse": pgettext_lazy("audit action", "criteria changed: analyse again"),
    "router_drift": pgettext_lazy("audit action", "router lost the share"),
    "router_not_served": pgettext_lazy("audit action", "served split not reached"),
    "router_superseded": pgettext_lazy("audit action", "router: call superseded"),
}
OBJECT_TYPES = {
    "migrationplan": gettext_lazy("migration plan"),
    "gate": gettext_lazy("gate"),
    "criterion": gettext_lazy("criterion"),
    "phase": gettext_lazy("phase"),
    "approval": gettext_lazy("approval"),
    "routercall": gettext_lazy("router call"),
    "trafficrouter": gettext_lazy("traffic router"),
}
# Gate names in audit reasons (the phases' own labels; gray steps by their share).
PHASES = {
    "pilot": gettext_lazy("pilot"),
    "gray": gettext_lazy("gray"),
    "full": gettext_lazy("full"),
}
GRAY_STEP = gettext_lazy("gray %(percent)s%%")
# The analysis reasons the services write; the params fill the placeholders.
REASONS = {
    "manual_gate": gettext_lazy("manual gate: no criteria, approvers decide"),
    "nothing_can_pass": gettext_lazy("no decisive criteria and no manual gate: nothing can pass"),
    "terminated": gettext_lazy("terminated"),
    "superseded": gettext_lazy("superseded: the gate's criteria changed"),
    "no_data": gettext_lazy("no data in the window for %(label)s"),
    "too_few": gettext_lazy("too few values in the step for %(label)s: %(samples)s of %(needed)s"),
    "no_baseline": gettext_lazy("no source-cluster baseline data in the window for %(label)s"),
    "no_baseline_premove": gettext_lazy(
        "no source-cluster baseline data in the pre-move window for %(label)s"
    ),
    "holds": gettext_lazy("%(label)s = %(value)s %(symbol)s %(threshold)s holds"),
    "does_not_hold": gettext_lazy("%(label)s = %(value)s %(symbol)s %(threshold)s does not hold"),
    "baseline": gettext_lazy("(threshold %(factor)s × source %(baseline)s)"),
    "baseline_premove": gettext_lazy(
        "(threshold %(factor)s × source %(baseline)s before the move)"
    ),
    "expected_on_target": gettext_lazy(
        "(%(factor)s × expected %(expected)s on %(target)s: source %(baseline)s on %(source)s "
        "before the move × %(scale)s, the twin's model of both; measured %(measured)s)"
    ),
    "expected_on_target_live": gettext_lazy(
        "(%(factor)s × expected %(expected)s on %(target)s: baseline %(baseline)s on "
        "%(source)s in the same window × %(scale)s, the twin's model of both; measured "
        "%(measured)s)"
    ),
    "no_hardware_model": gettext_lazy(
        "the twin does not model %(label)s of %(workload)s from %(pair)s: no expected figure "
        "on the target, no verdict"
    ),
    "stale": gettext_lazy(
        "stale: no value of %(label)s in the last %(seconds)s s (the newest is older than two "
        "telemetry intervals): no verdict on old data"
    ),
    "override_vote": gettext_lazy(
        "override %(count)s/%(required)s of an analysis that was %(outcome)s: %(comment)s"
    ),
    "override_request": gettext_lazy(
        "override requested past an analysis that was %(outcome)s: %(comment)s"
    ),
    "reanalyse": gettext_lazy("criteria changed: approvals void, the gate measures again"),
    "unbound": gettext_lazy(
        "criterion not bound to a workload identity (%(name)s was ambiguous): edit it"
    ),
    "idle_inference": gettext_lazy(
        "no traffic on the target in the window: nothing to judge %(label)s by"
    ),
    "idle_training": gettext_lazy(
        "no throughput on the target in the window: nothing to judge %(label)s by"
    ),
    "idle_baseline": gettext_lazy(
        "the source was idle in the pre-move window: no baseline for %(label)s"
    ),
    "zero_baseline": gettext_lazy(
        "the source's pre-move %(label)s is %(value)s: a factor of it proves nothing"
    ),
    "values": gettext_lazy("%(samples)s values"),
    "error": gettext_lazy("error: %(detail)s"),
    "vote": gettext_lazy("%(count)s/%(required)s: %(comment)s"),
    "vote_words": gettext_lazy("approval %(count)s of %(required)s"),
    "criterion_saved": gettext_lazy("criterion %(name)s: %(condition)s"),
    "criterion_deleted": gettext_lazy("criterion %(name)s deleted (it measured %(condition)s)"),
    "criterion_moved": gettext_lazy(
        "criterion %(name)s moved to %(destination)s (it measures %(condition)s)"
    ),
    "gate_revised": gettext_lazy(
        "the %(gate)s gate is now at revision %(revision)s: earlier approvals no longer count"
    ),
    "break_glass": gettext_lazy("break-glass %(count)s/%(required)s: %(comment)s"),
    "evidence_counted": gettext_lazy("counted: %(sources)s"),
    "evidence_ignored": gettext_lazy("ignored, untrusted: %(sources)s"),
    "router_call": gettext_lazy(
        "%(router)s: %(workload)s %(asked)s%% asked, %(confirmed)s%% confirmed (%(outcome)s): "
        "%(answer)s"
    ),
    "router_chosen": gettext_lazy("%(what)s: router %(old)s → %(new)s"),
    "router_settings": gettext_lazy("%(router)s (%(kind)s): %(fields)s"),
    "router_drift": gettext_lazy(
        "router no longer applies the share: %(router)s for %(workload)s: %(detail)s"
    ),
    "router_not_served": gettext_lazy(
        "the served split never reached the share: %(router)s for %(workload)s: %(detail)s"
    ),
    "router_errors": gettext_lazy("router: %(errors)s of %(requests)s target requests failed"),
    "split_out_of_tolerance": gettext_lazy("served split left the tolerance at %(at)s: %(detail)s"),
    "router_failed": gettext_lazy(
        "router %(router)s: %(outcome)s setting %(workload)s to %(share)s%%: %(answer)s"
    ),
    "evidence_ignored_audit": gettext_lazy(
        "%(count)s values of %(metric)s for %(target)s from %(source)s ignored by criterion "
        "%(criterion)s: not a source it trusts"
    ),
}
# A router call's outcome inside an audit reason (``rollout.models.RouterOutcome``'s codes).
ROUTER_OUTCOMES = {
    "confirmed": gettext_lazy("confirmed"),
    "intended": gettext_lazy("to be sent to the router"),
    "pending": gettext_lazy("awaiting the router's callback"),
    "refused": gettext_lazy("refused by the router"),
    "timeout": gettext_lazy("no answer in time"),
    "unreachable": gettext_lazy("router unreachable"),
    "mismatch": gettext_lazy("router confirmed another share"),
    "garbage": gettext_lazy("router answered garbage"),
    "superseded": gettext_lazy("superseded by a later call"),
    "unknown_name": gettext_lazy("unknown backend or server"),
}
# The kinds of telemetry source (``kind:name`` labels from telemetry.store.provenance).
SOURCE_KINDS = {
    "twin": gettext_lazy("digital twin"),
    "exporter": gettext_lazy("exporter"),
    "token": gettext_lazy("token"),
    "user": gettext_lazy("signed-in user"),
    "datasource": gettext_lazy("PromQL data source"),
    "unknown": gettext_lazy("unknown source"),
}


def source_label(label: str) -> str:
    """``token:ci`` → "token ci" in the reader's language (the name is shown as it is)."""
    kind, _sep, name = str(label).partition(":")
    shown = str(SOURCE_KINDS.get(kind, kind))
    return f"{shown} {name}" if name else shown


def reason_data(code: str, **params: object) -> dict:
    """What the services store next to the English text: a code and its parameters."""
    return {"code": code, "params": params}


def reason_text(data: dict | None, fallback: str, *, outcomes: dict | None = None) -> str:
    """The stored reason in the active language; the stored text when no code is known.

    A reason may be a list of parts (``{"parts": [...]}``), joined the way the English was.
    ``outcomes``: the analysis outcomes' labels, for a run's verdict (``Outcome.choices``).
    """
    if not isinstance(data, dict):
        return fallback
    try:
        if "parts" in data:
            parts = [reason_text(part, "", outcomes=outcomes) for part in data["parts"]]
            if not all(parts):
                return fallback
            return data.get("joiner", " ").join(parts)
        code, params = data["code"], dict(data.get("params") or {})
        if code == "text":
            return str(params["text"])  # what a person typed, as typed
        if code == "vote":
            # "approval 1 of 2", then the approver's comment as they typed it.
            text = str(REASONS["vote_words"]) % params
            return f"{text}: {params['comment']}" if params.get("comment") else text
        if code == "gate_revised":
            # The gate by its name ("gray 5%"), never its database id.
            percent = params.get("percent")
            gate = GRAY_STEP % {"percent": percent} if percent else PHASES[params["phase"]]
            return str(REASONS[code]) % {"gate": gate, "revision": params["revision"]}
        if code == "message":
            # A refused command's reason (rollout/services/errors.py): its own template.
            return _(params["message"]) % params.get("values", {})
        if code == "phase":
            # A run's outcome, optionally naming the criterion that decided it.
            label = str((outcomes or {}).get(params["phase"], params["phase"]))
            if not params.get("criterion"):
                return label
            return _("%(phase)s: %(criterion)s") % {
                "phase": label,
                "criterion": params["criterion"],
            }
        if code == "expected_on_target" and params.get("when") == "same_window":
            code = "expected_on_target_live"
        if code in ("override_vote", "override_request"):
            params["outcome"] = str((outcomes or {}).get(params["outcome"], params["outcome"]))
        if code in ("router_call", "router_failed"):
            params["outcome"] = str(ROUTER_OUTCOMES.get(params["outcome"], params["outcome"]))
        if code in ("evidence_counted", "evidence_ignored"):
            params["sources"] = ", ".join(f"{source_label(s)} {n}" for s, n in params["sources"])
        elif code == "evidence_ignored_audit":
            params["source"] = source_label(params["source"])
        return str(REASONS[code]) % params
    except (KeyError, TypeError, ValueError):
        return fallback


def action_label(code: str) -> str:
    """An audit action's label; a refused command reads "<action> (denied)"."""
    if code.endswith("_denied"):
        base = code.removesuffix("_denied")
        return _("%(action)s (denied)") % {"action": action_label(base)}
    return str(ACTIONS.get(code, code))


def state_label(code: str, *vocabularies: dict) -> str:
    """A state's label from the first vocabulary (``dict(GateState.choices)``, ...) that has it;
    the caller orders them by the object (a gate's "passed" is not a plan's)."""
    for labels in vocabularies:
        if code in labels:
            return str(labels[code])
    return code


def object_type_label(code: str) -> str:
    return str(OBJECT_TYPES.get(code, code))


# The same, evaluated when shown: for messages built before the reader's language is known.
action_label_lazy = lazy(action_label, str)
state_label_lazy = lazy(state_label, str)


def actor_label(label: str) -> str:
    """The workflow's own actor reads in the reader's language; people keep their names."""
    return _("system") if label == "system" else label
