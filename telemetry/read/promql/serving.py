"""Serving figures from a PromQL data source: the same :class:`ServingWindow` as the store.

Quantiles are Prometheus' own: ``histogram_quantile(q, sum by (le) (rate(<family>_bucket{…}[w])))``
at the window's end, ``w`` the window; requests ``sum(increase(…[w]))`` per endpoint, finished
counted as the store counts them (success + failed, or received where the engine has no
success counter: SGLang), so the error ratio is increase(failed) ÷ increase(all). The series are
chosen by the workload's ``ServingBinding`` rows as label matchers (``model_name``, and
``instance`` or ``namespace``/``pod``), several bindings joined with ``or``.
"""

from __future__ import annotations

import math
from datetime import datetime

from inventory.label_selectors import parse_selector
from telemetry.families.serving import source_families
from telemetry.models import PromQLDataSource, ServingBinding
from telemetry.read.local.serving import QUANTILES, ServingWindow
from telemetry.read.promql.reads import _Reader, _window
from telemetry.read.promql.translate import quote
from telemetry.store.provenance import DATASOURCE_LABEL


def binding_matchers(binding: ServingBinding) -> str:
    """Label matchers naming a binding's series (without braces)."""
    matchers = [f"model_name={quote(binding.model_name)}"]
    if binding.instance and "/" in binding.instance:
        namespace, pod = binding.instance.split("/", 1)
        matchers += [f"namespace={quote(namespace)}", f"pod={quote(pod)}"]
    elif binding.instance:
        matchers.append(f"instance={quote(binding.instance)}")
    return ",".join(matchers)


def selector_matchers(selector: str) -> str:
    """A workload's ``series_selector`` as matchers on serving series: its namespace/pod/
    container/hpc_job terms as written; ``host`` becomes the ``instance`` address's host."""
    import re

    parts = []
    for m in parse_selector(selector):
        if m.name != "host":
            parts.append(f"{m.name}{m.op}{quote(m.value)}")
        elif m.op in ("=", "=~"):
            value = re.escape(m.value) if m.op == "=" else f"(?:{m.value})"
            parts.append(f"instance=~{quote(value + '(?::[0-9]+)?')}")
        else:
            value = re.escape(m.value) if m.op == "!=" else f"(?:{m.value})"
            parts.append(f"instance!~{quote(value + '(?::[0-9]+)?')}")
    return ",".join(parts)


def _selector(families: tuple[str, ...], matchers: str, extra: str) -> str:
    parts = [f"__name__=~{quote('|'.join(families))}", matchers]
    if extra.strip():
        parts.append(extra.strip().strip(","))
    return "{" + ",".join(p for p in parts if p) + "}"


def _vector(
    func: str,
    metric: str | tuple[str, ...],
    bindings: list[ServingBinding],
    window: str,
    extra: str,
    labels: str = "",
) -> str:
    """``func(sel_1[w]) or func(sel_2[w]) …`` over the bindings and families (``metric``: a
    catalogue name, or the engines' family names themselves).

    One selector per family, in the order of preference, joined by ``or``: ``func`` drops the
    name, so a vLLM exporting both ``inter_token_latency_seconds`` and the deprecated
    ``time_per_output_token_seconds`` would otherwise give two series with one label set
    (Prometheus answers 422); ``or`` keeps the newer, as the ingestion does."""
    families = source_families(metric) if isinstance(metric, str) else metric
    parts = []
    for binding in bindings:
        own = binding if isinstance(binding, str) else binding_matchers(binding)
        matchers = ",".join(filter(None, [own, labels]))
        parts += [
            f"{func}({_selector((family,), matchers, extra)}[{window}])" for family in families
        ]
    return " or ".join(parts)


# vLLM counts aborted requests in request_success_total{finished_reason="abort"}; MindIE and
# SGLang have counters of their own (no finished_reason label, so != "abort" keeps them).
_SUCCESS = (("vllm:request_success_total", "request_success_total"), 'finished_reason!="abort"')
_FAILED = (
    (("request_failed_total", "sglang:num_aborted_requests_total"), ""),
    (("vllm:request_success_total",), 'finished_reason="abort"'),
)


_RECEIVED = source_families("serving_requests_received_total")


def _endpoint_key(labels: dict[str, str]) -> str:
    pod = labels.get("pod")
    where = (
        (f"{labels['namespace']}/{pod}" if labels.get("namespace") else pod)
        if pod
        else labels.get("instance", "")
    )
    return f"{labels.get('model_name', '')}@{where or ''}"


def _finished(own: dict[str, float]) -> float:
    """Finished requests of one endpoint (the error ratio's denominator)."""
    if "success" in own:
        return own["success"] + own.get("failed", 0.0)
    return own.get("received", 0.0)


def serving_window(
    source: PromQLDataSource, *, bindings: list[ServingBinding], start: datetime, end: datetime
) -> ServingWindow:
    reader = _Reader(source)
    window = _window((end - start).total_seconds())
    extra = source.selector or ""

    def scalar(expr: str) -> float | None:
        found = reader._run(lambda: reader.client.query(expr, at=end))
        values = [v for s in found for _, v in s.points[-1:] if math.isfinite(v)]
        return values[0] if values else None

    figures: dict[str, dict[str, float | None]] = {}
    for histogram in ("serving_ttft_seconds", "serving_tpot_seconds", "serving_e2e_seconds"):
        rates = _vector("rate", f'{histogram}_bucket{{le="+Inf"}}', bindings, window, extra)
        figures[histogram] = {
            label: scalar(f"histogram_quantile({q}, sum by (le) ({rates}))")
            for label, q in QUANTILES.items()
        }
        total = _vector("rate", f"{histogram}_sum", bindings, window, extra)
        count = _vector("rate", f"{histogram}_count", bindings, window, extra)
        figures[histogram]["mean"] = scalar(f"sum({total}) / sum({count})")
    # Per endpoint, as the store counts them (``finished``): success + failed where the
    # engine exports a success counter (vLLM, MindIE), else the requests it received
    # (SGLang has only ``num_requests_total`` and ``num_aborted_requests_total``).
    counts: dict[str, dict[str, float]] = {}
    queries = [("success", _vector("increase", _SUCCESS[0], bindings, window, extra, _SUCCESS[1]))]
    queries += [
        ("failed", _vector("increase", names, bindings, window, extra, labels))
        for names, labels in _FAILED
    ]
    queries.append(("received", _vector("increase", _RECEIVED, bindings, window, extra)))
    for what, expr in queries:
        by = f"sum by (model_name, instance, namespace, pod) ({expr})"
        found = reader._run(lambda e=by: reader.client.query(e, at=end))
        for series in found:
            value = series.points[-1][1] if series.points else 0.0
            if not math.isfinite(value):
                continue
            own = counts.setdefault(_endpoint_key(series.labels), {})
            own[what] = own.get(what, 0.0) + value
    per_endpoint = {key: _finished(own) for key, own in counts.items()}
    requests = sum(per_endpoint.values())
    failed = sum(own.get("failed", 0.0) for own in counts.values())
    scrapes = scalar(
        "max("
        + _vector("count_over_time", "serving_ttft_seconds_count", bindings, window, extra)
        + ")"
    )
    return ServingWindow(
        start=start,
        end=end,
        endpoints=tuple(b if isinstance(b, str) else b.key_prefix for b in bindings),
        ttft=figures["serving_ttft_seconds"],
        tpot=figures["serving_tpot_seconds"],
        e2e=figures["serving_e2e_seconds"],
        requests=requests,
        failed=failed,
        scrapes=int(scrapes or 0),
        per_endpoint=per_endpoint,
        sources={DATASOURCE_LABEL: int(scrapes or 0)} if scrapes else {},
    )
