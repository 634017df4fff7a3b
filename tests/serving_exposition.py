"""vLLM / SGLang / MindIE ``/metrics`` text built from observations, for tests and harnesses.

:class:`EngineMetrics` accumulates what a serving engine's Prometheus client would: each
histogram a set of cumulative bucket counters (vLLM's bucket bounds), ``_count``, ``_sum``,
request counters and gauges; :meth:`EngineMetrics.text` renders the exposition the engine
serves. ``prefix`` selects the engine's naming (``vllm:``, ``sglang:``, ``""`` for MindIE).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

from simulation.engine.serving_histograms import TPOT_BOUNDS, TTFT_BOUNDS

# vLLM's bucket bounds: the same ones the twin's histograms use (one list, in the engine).
TTFT_BUCKETS = TTFT_BOUNDS
TPOT_BUCKETS = TPOT_BOUNDS

_TTFT, _TPOT = "time_to_first_token_seconds", "inter_token_latency_seconds"


@dataclass
class _Histogram:
    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value
        self.n += 1

    def cumulative(self) -> list[tuple[str, int]]:
        out, running = [], 0
        for bound, count in zip((*self.bounds, math.inf), self.counts, strict=True):
            running += count
            out.append(("+Inf" if math.isinf(bound) else repr(bound), running))
        return out


@dataclass
class EngineMetrics:
    """One engine's counters for one model (``labels`` go on every series)."""

    model: str = "llama-3-8b"
    prefix: str = "vllm:"
    labels: dict[str, str] = field(default_factory=dict)
    ttft: _Histogram = field(default_factory=lambda: _Histogram(TTFT_BUCKETS))
    tpot: _Histogram = field(default_factory=lambda: _Histogram(TPOT_BUCKETS))
    success: int = 0
    failed: int = 0
    running: int = 0

    def request(self, ttft: float, tpot: float, *, ok: bool = True) -> None:
        self.ttft.observe(ttft)
        self.tpot.observe(tpot)
        if ok:
            self.success += 1
        else:
            self.failed += 1

    def restart(self) -> None:
        """The engine restarted: every counter starts again from zero."""
        fresh = EngineMetrics(self.model, self.prefix, dict(self.labels))
        self.__dict__.update(fresh.__dict__)

    def text(self) -> str:
        p = self.prefix
        base = {"model_name": self.model, **self.labels}

        def lab(extra: dict | None = None) -> str:
            items = {**base, **(extra or {})}
            return "{" + ",".join(f'{k}="{v}"' for k, v in items.items()) + "}"

        lines = []
        for name, hist in ((_TTFT, self.ttft), (_TPOT, self.tpot)):
            lines.append(f"# TYPE {p}{name} histogram")
            for le, count in hist.cumulative():
                lines.append(f"{p}{name}_bucket{lab({'le': le})} {count}")
            lines.append(f"{p}{name}_sum{lab()} {hist.total!r}")
            lines.append(f"{p}{name}_count{lab()} {hist.n}")
        if p == "vllm:":
            lines.append(f"# TYPE {p}request_success_total counter")
            lines.append(
                f"{p}request_success_total{lab({'finished_reason': 'stop'})} {self.success}"
            )
            lines.append(
                f"{p}request_success_total{lab({'finished_reason': 'abort'})} {self.failed}"
            )
            lines.append(f"# TYPE {p}num_requests_running gauge")
            lines.append(f"{p}num_requests_running{lab()} {self.running}")
        elif p == "sglang:":
            lines.append(f"# TYPE {p}num_requests_total counter")
            lines.append(f"{p}num_requests_total{lab()} {self.success + self.failed}")
            lines.append(f"# TYPE {p}num_aborted_requests_total counter")
            lines.append(f"{p}num_aborted_requests_total{lab()} {self.failed}")
        else:  # MindIE
            for name, value in (
                ("request_received_total", self.success + self.failed),
                ("request_success_total", self.success),
                ("request_failed_total", self.failed),
            ):
                lines.append(f"# TYPE {name} counter")
                lines.append(f"{name}{lab()} {value}")
        return "\n".join(lines) + "\n"
