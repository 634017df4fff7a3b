"""Serving-engine families (vLLM, SGLang, MindIE) → the serving catalogue, bucket-aware.

Called by :func:`telemetry.families.mapping.map_samples` for every sample before the exporter
families, so the text push, the scrape, remote-write and PromQL answers map serving series
the same way. Pure Python, no Django.

**Names.** Each engine's family maps onto one catalogue name (docs/architecture.md §5b):

- ``serving_ttft_seconds`` (histogram): ``vllm:``/``sglang:time_to_first_token_seconds``,
  MindIE ``time_to_first_token_seconds``;
- ``serving_tpot_seconds`` (histogram): ``vllm:``/``sglang:inter_token_latency_seconds`` (the
  older ``time_per_output_token_seconds`` when the newer is absent), MindIE
  ``time_per_output_token_seconds``;
- ``serving_e2e_seconds`` (histogram): ``*e2e_request_latency_seconds``;
- ``serving_requests_success_total``: ``vllm:request_success_total`` (``finished_reason`` other
  than ``abort``), MindIE ``request_success_total``;
- ``serving_requests_failed_total``: ``vllm:request_success_total{finished_reason="abort"}``,
  ``sglang:num_aborted_requests_total``, MindIE ``request_failed_total``;
- ``serving_requests_received_total``: ``sglang:num_requests_total``, MindIE
  ``request_received_total``;
- ``serving_requests_running`` / ``_waiting``: ``vllm:num_requests_running`` / ``_waiting``,
  ``sglang:num_running_reqs`` / ``num_queue_reqs``, MindIE ``num_requests_running`` / ``_waiting``;
- ``serving_kv_cache_usage_ratio``: ``vllm:kv_cache_usage_perc`` (older
  ``vllm:gpu_cache_usage_perc``), ``sglang:token_usage``, MindIE ``npu_cache_usage_perc``;
- ``serving_prompt_tokens_total`` / ``serving_generation_tokens_total``: ``prompt_tokens_total``
  / ``generation_tokens_total`` of each engine.

MindIE's names carry no prefix, so they are only taken for serving when the sample has a
``model_name`` label (as MindIE always sends); vLLM and SGLang are recognised by prefix.

**Histograms are stored bucket-aware.** Each ``le`` of a histogram is its own cumulative
counter, catalogue name ``serving_ttft_seconds_bucket{le="0.05"}`` (``le`` normalised:
``"1"`` and ``"1.0"`` are one bucket, ``+Inf`` spelled so), beside ``serving_ttft_seconds_count``
and ``_sum``. A window's quantile is then computed from the buckets' increases like
Prometheus' ``histogram_quantile`` (:mod:`telemetry.read.local.histograms`).

**Entity.** A serving endpoint: ``<model_name>@<pod>`` (``namespace/pod`` when a namespace is
given), else ``<model_name>@<instance>``, else ``<model_name>@<host>`` — the cluster, the model
and the instance or pod. Series of one endpoint that differ only in a label we do not key on
(vLLM's ``finished_reason``, ``engine``) are summed per scrape, never "last one wins".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SERVING_KIND = "serving_endpoint"

# The catalogue's serving metrics: name -> (unit, type, description).
HISTOGRAMS: dict[str, str] = {
    "serving_ttft_seconds": "Time to first token, per request",
    "serving_tpot_seconds": "Time per output token (inter-token latency), per token",
    "serving_e2e_seconds": "End-to-end request latency, per request",
}
SCALARS: dict[str, tuple[str, str, str]] = {
    "serving_requests_success_total": ("requests", "counter", "Requests finished successfully"),
    "serving_requests_failed_total": ("requests", "counter", "Requests failed or aborted"),
    "serving_requests_received_total": ("requests", "counter", "Requests received"),
    "serving_requests_running": ("requests", "gauge", "Requests running on the accelerators"),
    "serving_requests_waiting": ("requests", "gauge", "Requests waiting to be scheduled"),
    "serving_kv_cache_usage_ratio": ("ratio", "gauge", "KV-cache blocks in use, 0-1"),
    "serving_prompt_tokens_total": ("tokens", "counter", "Prefill tokens processed"),
    "serving_generation_tokens_total": ("tokens", "counter", "Tokens generated"),
}
# Figures derived over a window from the series above (what gates read; never stored).
DERIVED: dict[str, tuple[str, str]] = {
    "serving_error_ratio": ("ratio", "Increase of failed ÷ increase of all finished requests"),
    "serving_requests_per_second": ("requests_per_second", "Finished requests per second"),
}

# What ``telemetry.read.window_aggregate`` answers from the serving series.
GATE_METRICS = frozenset(
    {
        "serving_ttft_seconds",
        "serving_tpot_seconds",
        "serving_error_ratio",
        "serving_requests_per_second",
    }
)
_HIST = {
    "ttft": "serving_ttft_seconds",
    "tpot": "serving_tpot_seconds",
    "e2e": "serving_e2e_seconds",
}
_LATENCY = {
    "time_to_first_token_seconds": "ttft",
    "inter_token_latency_seconds": "tpot",
    "time_per_output_token_seconds": "tpot",
    "e2e_request_latency_seconds": "e2e",
}
# The deprecated vLLM/SGLang TPOT name is used only when the newer one is absent.
OLD_TPOT = "time_per_output_token_seconds"
NEW_TPOT = "inter_token_latency_seconds"
_COMMON = {
    "prompt_tokens_total": "serving_prompt_tokens_total",
    "generation_tokens_total": "serving_generation_tokens_total",
}
_SCALAR_NAMES: dict[str, dict[str, str]] = {
    "vllm": {
        **_COMMON,
        "request_success_total": "serving_requests_success_total",
        "num_requests_running": "serving_requests_running",
        "num_requests_waiting": "serving_requests_waiting",
        "kv_cache_usage_perc": "serving_kv_cache_usage_ratio",
        "gpu_cache_usage_perc": "serving_kv_cache_usage_ratio",
    },
    "sglang": {
        **_COMMON,
        "num_requests_total": "serving_requests_received_total",
        "num_aborted_requests_total": "serving_requests_failed_total",
        "num_running_reqs": "serving_requests_running",
        "num_queue_reqs": "serving_requests_waiting",
        "token_usage": "serving_kv_cache_usage_ratio",
    },
    "mindie": {
        **_COMMON,
        "request_received_total": "serving_requests_received_total",
        "request_success_total": "serving_requests_success_total",
        "request_failed_total": "serving_requests_failed_total",
        "num_requests_running": "serving_requests_running",
        "num_requests_waiting": "serving_requests_waiting",
        "npu_cache_usage_perc": "serving_kv_cache_usage_ratio",
    },
}
_PREFIXES = (("vllm:", "vllm"), ("sglang:", "sglang"))
# Labels that name the endpoint or describe it; every other label is summed over.
POD_LABELS = ("pod", "pod_name")
NAMESPACE_LABELS = ("namespace", "pod_namespace")


@dataclass(frozen=True)
class ServingName:
    """What one exposition sample name is: engine, catalogue metric, ``le`` when a bucket."""

    engine: str
    metric: str  # the catalogue name the sample is stored under
    family: str  # the engine's family name without prefix and suffix (for the TPOT choice)


def le_text(le: str | float) -> str:
    """One spelling per bucket bound: ``"1"``, ``"1.0"`` and ``1`` are ``"1.0"``; ``+Inf``."""
    value = float(le)
    return "+Inf" if math.isinf(value) and value > 0 else repr(value)


def bucket_metric(histogram: str, le: str | float) -> str:
    """The catalogue name of one bucket: ``serving_ttft_seconds_bucket{le="0.05"}``."""
    return f'{histogram}_bucket{{le="{le_text(le)}"}}'


def bucket_prefix(histogram: str) -> str:
    return f'{histogram}_bucket{{le="'


def bucket_le(metric: str) -> float:
    """The upper bound of a bucket metric (``+Inf`` → ``inf``)."""
    return float(metric.rsplit('le="', 1)[1].rstrip('"}'))


def serving_name(name: str, labels: dict[str, str]) -> ServingName | None:
    """The serving metric ``name`` maps onto, or ``None`` if it is not a serving family."""
    engine, bare = None, name
    for prefix, which in _PREFIXES:
        if name.startswith(prefix):
            engine, bare = which, name[len(prefix) :]
            break
    if engine is None:
        if "model_name" not in labels or name.startswith(("DCGM_", "npu_chip_")):
            return None
        engine = "mindie"
    for suffix in ("_bucket", "_count", "_sum"):
        if bare.endswith(suffix):
            family = bare.removesuffix(suffix)
            short = _LATENCY.get(family)
            if short is None:
                break
            histogram = _HIST[short]
            if suffix == "_bucket":
                le = labels.get("le")
                if le is None:
                    return None
                try:
                    return ServingName(engine, bucket_metric(histogram, le), family)
                except ValueError:
                    return None
            return ServingName(engine, histogram + suffix, family)
    metric = _SCALAR_NAMES[engine].get(bare)
    if metric is None:
        return None
    if engine == "vllm" and metric == "serving_requests_success_total":
        if labels.get("finished_reason") == "abort":
            metric = "serving_requests_failed_total"
    return ServingName(engine, metric, bare)


def endpoint_key(labels: dict[str, str], host: str | None) -> str | None:
    """``<model>@<namespace/pod | instance | host>``; ``None`` when nothing names it."""
    model = labels.get("model_name")
    if not model:
        return None
    pod = next((labels[n] for n in POD_LABELS if labels.get(n)), None)
    if pod:
        namespace = next((labels[n] for n in NAMESPACE_LABELS if labels.get(n)), None)
        where = f"{namespace}/{pod}" if namespace else pod
    else:
        where = labels.get("instance") or host
    if not where:
        return None
    return f"{model}@{where}"


def catalogue_rows(names: set[str]) -> list[tuple[str, str, str, str]]:
    """``(name, unit, type, description)`` of the serving catalogue names among ``names``."""
    rows = []
    for name in names:
        if name in SCALARS:
            unit, kind, description = SCALARS[name]
        elif "_bucket{" in name:
            base = name.split("_bucket{", 1)[0]
            le = name.split('le="', 1)[1].rstrip('"}')
            unit, kind, description = "count", "counter", f"{HISTOGRAMS[base]}: observations ≤ {le}"
        elif name.endswith("_count") and name.removesuffix("_count") in HISTOGRAMS:
            unit, kind = "count", "counter"
            description = f"{HISTOGRAMS[name.removesuffix('_count')]}: observations"
        elif name.endswith("_sum") and name.removesuffix("_sum") in HISTOGRAMS:
            unit, kind = "seconds", "counter"
            description = f"{HISTOGRAMS[name.removesuffix('_sum')]}: sum of observations"
        else:
            continue
        rows.append((name, unit, kind, description))
    return rows


def unit_of(metric: str) -> str:
    if metric in SCALARS:
        return SCALARS[metric][0]
    return "seconds" if metric.endswith("_sum") else "count"


def is_serving_metric(name: str) -> bool:
    """A catalogue name this module writes or derives (criteria may name them)."""
    base = name.split("_bucket{", 1)[0]
    for suffix in ("_count", "_sum"):
        if base.endswith(suffix) and base.removesuffix(suffix) in HISTOGRAMS:
            return True
    return base in HISTOGRAMS or name in SCALARS or name in DERIVED


def source_families(metric: str) -> tuple[str, ...]:
    """The engines' series names for a serving catalogue metric (what PromQL asks for)."""
    short = {v: k for k, v in _HIST.items()}
    base, suffix = metric, ""
    if "_bucket{" in metric:
        base, suffix = metric.split("_bucket{", 1)[0], "_bucket"
    elif metric.endswith(("_count", "_sum")):
        base, _, tail = metric.rpartition("_")
        suffix = f"_{tail}"
    if base in short and suffix:
        families = [f for f, s in _LATENCY.items() if s == short[base]]
        names = [f"{p}{f}{suffix}" for p, _ in _PREFIXES for f in families]
        return (*names, *(f"{f}{suffix}" for f in families))
    names = []
    for engine, table in _SCALAR_NAMES.items():
        prefix = f"{engine}:" if engine != "mindie" else ""
        names += [f"{prefix}{bare}" for bare, m in table.items() if m == metric]
    if metric == "serving_requests_failed_total":
        names.append("vllm:request_success_total")  # finished_reason="abort"
    return tuple(dict.fromkeys(names))


@dataclass
class ServingBatch:
    """The serving samples of one exposition, summed per endpoint, metric and time.

    ``add`` takes a sample the caller has already checked for a finite value; ``rows`` gives
    ``(metric, endpoint key, host, model, timestamp, value, line, source name, labels)``:
    series that differ only in labels not keyed on are added (a ratio is averaged), and the
    deprecated TPOT family is dropped for an endpoint that also sends the new one.
    """

    points: dict = None  # (metric, key, ts) -> [value, n, host, model, line, name, labels]
    new_tpot: set = None

    def __post_init__(self) -> None:
        self.points, self.new_tpot = {}, set()

    def add(
        self,
        name: ServingName,
        key: str,
        host: str | None,
        sample_name: str,
        labels: dict,
        timestamp: float,
        value: float,
        line: int,
    ) -> None:
        if name.family == NEW_TPOT:
            self.new_tpot.add(key)
        point = self.points.get((name.metric, key, timestamp, name.family))
        if point is None:
            self.points[(name.metric, key, timestamp, name.family)] = [
                value,
                1,
                host,
                labels.get("model_name"),
                line,
                sample_name,
                labels,
            ]
        else:
            point[0] += value
            point[1] += 1

    def rows(self):
        merged: dict = {}
        for (metric, key, ts, family), point in self.points.items():
            if family == OLD_TPOT and key in self.new_tpot:
                continue
            value, n, host, model, line, sample_name, labels = point
            if metric == "serving_kv_cache_usage_ratio":
                value /= n
            if (metric, key, ts) in merged:  # e.g. vLLM success + abort never share a name
                merged[(metric, key, ts)][4] += value
                continue
            merged[(metric, key, ts)] = [
                metric,
                key,
                host,
                model,
                value,
                ts,
                line,
                sample_name,
                labels,
            ]
        for metric, key, host, model, value, ts, line, sample_name, labels in merged.values():
            yield metric, key, host, model, ts, value, line, sample_name, labels
