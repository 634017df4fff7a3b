"""Who a sample is about: the host chain, chip identity and the reasons a sample is refused.

Rules (docs/architecture.md §5): a chip is its own ID — dcgm-exporter's ``UUID`` (plus
``GPU_I_ID`` for a MIG slice), npu-exporter's ``vdie_id``, else the exporter's index plus the
host. The host is the first label of the cluster's host chain that is present (by default
``Hostname``, ``hostname``, ``node``, then the host part of ``instance``). Pure Python.
"""

from __future__ import annotations

import re
from enum import StrEnum

DEFAULT_HOST_LABELS: tuple[str, ...] = ("Hostname", "hostname", "node", "instance")
# Labels whose value is Prometheus' ``host:port`` target address: only the host part names a node.
ADDRESS_LABELS = frozenset({"instance"})
# Labels Prometheus adds to tell its targets apart: two series of one index-plus-host chip that
# differ here come from two exporters, i.e. two physical chips that cannot be told apart.
TARGET_LABELS = ("instance", "job")


class Refusal(StrEnum):
    """Why a sample or a whole push was refused (counted per reason in the reply, on
    ``/metrics`` and on the exporters page). Value drops that mean "no reading" — DCGM's blank
    sentinel, npu-exporter's ``-1``, NaN — and families that are not an exporter's are
    *filtered*, not refused: they are counted in ``dropped`` only."""

    UNKNOWN_CLUSTER = "unknown_cluster"
    NO_HOST = "no_host"  # no label of the host chain and no node= given
    NO_ENTITY = "no_entity"  # a chip metric without UUID/gpu or vdie_id/id
    AMBIGUOUS_CHIP = "ambiguous_chip"  # one index-plus-host chip reported by two targets
    TIMESTAMP_OUT_OF_RANGE = "timestamp_out_of_range"
    VALUE_OUT_OF_RANGE = "value_out_of_range"
    LABEL_TOO_LONG = "label_too_long"
    LABEL_CONTROL_CHARACTER = "label_control_character"
    TOO_MANY_LABELS = "too_many_labels"
    ENTITY_KEY_TOO_LONG = "entity_key_too_long"
    TOO_MANY_NEW_ENTITIES = "too_many_new_entities"
    TOO_MANY_NEW_METRICS = "too_many_new_metrics"
    TOO_MANY_SAMPLES = "too_many_samples"
    TOO_LARGE = "too_large"
    INVALID_BODY = "invalid_body"


FILTERED = frozenset(
    {
        "nan_value",
        "infinite_value",
        "dcgm_blank_sentinel",
        "npu_collection_failed",
        "not_exporter_metric",
    }
)


def refusal_of(reason: str) -> str | None:
    """The refusal a ``dropped`` reason counts as (``None`` for filtered no-value readings);
    a reason not in the enumeration counts as ``invalid_body``, so the enumeration stays
    closed (``/metrics`` label values are bounded)."""
    if reason in FILTERED:
        return None
    try:
        return Refusal(reason).value
    except ValueError:
        return Refusal.INVALID_BODY.value


def refused(dropped: dict[str, int]) -> dict[str, int]:
    """The refusals among a reply's ``dropped`` counts, per reason of :class:`Refusal`."""
    result: dict[str, int] = {}
    for reason, count in dropped.items():
        refusal = refusal_of(reason)
        if refusal is not None:
            result[refusal] = result.get(refusal, 0) + count
    return result


def host_labels_parse(text: str) -> tuple[str, ...]:
    """``"Hostname, node, instance"`` → the chain; empty text means the default chain."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    return names or DEFAULT_HOST_LABELS


def host_of(
    labels: dict[str, str], chain: tuple[str, ...], default_host: str | None = None
) -> str | None:
    """The first host the chain names. ``default_host`` (a push's ``node=``, a target's node)
    comes before the first address label: an explicit host beats a guess from the address."""
    for name in chain:
        if name in ADDRESS_LABELS and default_host:
            return default_host
        value = labels.get(name)
        if value:
            return address_host(value) if name in ADDRESS_LABELS else value
    return default_host


def address_host(value: str) -> str | None:
    """The host part of ``host:port`` (``[ipv6]:port`` too); a bare host is returned as is."""
    if value.startswith("["):
        return value[1:].split("]", 1)[0] or None
    host, _, port = value.rpartition(":")
    return host if host and port.isdigit() else value


#: A host-derived chip id as :func:`chip_id` makes it (``<host>/gpu3``, ``<host>/npu0/gi1``):
#: its series carry no chip label to be asked for by.
HOST_DERIVED_CHIP = re.compile(r"/(?:gpu|npu)\d+(?:/gi\d+)?$")


def chip_id(kind: str, labels: dict[str, str], host: str) -> tuple[str | None, str | None, bool]:
    """``(chip id, parent GPU id, host-derived)`` for a chip sample, ``(None, None, False)``
    when it names no chip. A MIG slice's id is its GPU's UUID plus ``/gi<GPU_I_ID>``; an id
    made of the host and the exporter's index is *host-derived* (it cannot follow a move)."""
    if kind == "dcgm":
        uuid = labels.get("UUID") or labels.get("uuid")
        index, prefix = labels.get("gpu"), "gpu"
        instance = labels.get("GPU_I_ID")
    elif kind == "npu":
        uuid, index, prefix, instance = labels.get("vdie_id"), labels.get("id"), "npu", None
    else:
        return None, None, False
    if uuid:
        if instance:
            return f"{uuid}/gi{instance}", uuid, False
        return uuid, None, False
    if index:
        base = f"{host}/{prefix}{index}"
        if instance:
            return f"{base}/gi{instance}", base, True
        return base, None, True
    return None, None, False
