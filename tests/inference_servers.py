"""Stand-ins for GPU inference servers behind a real gateway, and a bounded load generator.

``InferenceBackend`` answers OpenAI-compatible ``POST /v1/completions`` after a latency drawn
from its :class:`LatencyProfile` (time to first token, then time per output token, both
log-normal around a median, seeded) and exposes what vLLM exports on ``GET /metrics``, in
vLLM's names and form: ``vllm:time_to_first_token_seconds``,
``vllm:time_per_output_token_seconds`` (and ``vllm:inter_token_latency_seconds``),
``vllm:e2e_request_latency_seconds`` as histograms with vLLM's bucket bounds,
``vllm:request_success_total``, ``vllm:prompt_tokens_total``,
``vllm:generation_tokens_total``, ``vllm:num_requests_running`` / ``_waiting`` and
``vllm:kv_cache_usage_perc``, every series labelled ``model_name``. Each answer names the
backend that served it (``X-Served-By`` and the body's ``system_fingerprint``), so a client
can count what a gateway actually sent where.

``LoadGenerator`` sends completions to a URL from a few threads at a bounded rate, one
connection per request (so the gateway balances each request), and records every request's
server and outcome. Nothing here retries: a request that fails is a lost request.
"""

from __future__ import annotations

import http.client
import json
import math
import random
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# vLLM's bucket bounds (vllm/engine/metrics.py, v0.6–0.8).
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0)  # fmt: skip
TPOT_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0)


@dataclass(frozen=True)
class LatencyProfile:
    """Log-normal latencies: ``ttft_median`` s to the first token, ``tpot_median`` s per
    further token, ``sigma`` their spread (0: always the median); ``tokens`` per answer."""

    ttft_median: float = 0.004
    tpot_median: float = 0.0005
    sigma: float = 0.3
    tokens: int = 8
    seed: int = 1

    def ttft_p99(self) -> float:
        """The distribution's own 99th percentile (z = 2.326)."""
        return self.ttft_median * math.exp(2.326 * self.sigma)


class Histogram:
    """A Prometheus histogram: cumulative bucket counters, sum and count."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        index = next((i for i, b in enumerate(self.bounds) if value <= b), len(self.bounds))
        self.counts[index] += 1
        self.sum += value
        self.count += 1

    def lines(self, name: str, labels: str) -> list[str]:
        out = [f"# HELP {name} Histogram of {name.split(':')[-1]}.", f"# TYPE {name} histogram"]
        running = 0
        for bound, n in zip(self.bounds, self.counts, strict=False):
            running += n
            out.append(f'{name}_bucket{{{labels},le="{bound}"}} {running}')
        out.append(f'{name}_bucket{{{labels},le="+Inf"}} {self.count}')
        out.append(f"{name}_sum{{{labels}}} {self.sum}")
        out.append(f"{name}_count{{{labels}}} {self.count}")
        return out


class InferenceBackend:
    """An OpenAI-compatible completion server on a loopback port (see the module docstring)."""

    def __init__(
        self, name: str, *, model: str = "llama-3-8b", profile: LatencyProfile | None = None
    ) -> None:
        self.name, self.model = name, model
        self.profile = profile or LatencyProfile()
        self._random = random.Random(self.profile.seed)
        self._lock = threading.Lock()
        self.ttft = Histogram(TTFT_BUCKETS)
        self.tpot = Histogram(TPOT_BUCKETS)
        self.e2e = Histogram(E2E_BUCKETS)
        self.success = self.prompt_tokens = self.generation_tokens = 0
        self.running = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if urllib.parse.urlsplit(self.path).path != "/v1/completions":
                    self._send(404, {"error": {"message": "not found"}})
                    return
                try:
                    request = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                self._send(200, outer.complete(request))

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path != "/metrics":
                    self._send(404, {"error": {"message": "not found"}})
                    return
                body = outer.metrics_text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _send(self, status: int, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("X-Served-By", outer.name)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _draw(self, median: float) -> float:
        sigma = self.profile.sigma
        return median if sigma <= 0 else median * math.exp(self._random.gauss(0.0, sigma))

    def complete(self, request: dict) -> dict:
        """Wait a drawn TTFT and per-token time, record vLLM's metrics, answer OpenAI-style."""
        with self._lock:
            self.running += 1
            ttft = self._draw(self.profile.ttft_median)
            tpots = [self._draw(self.profile.tpot_median) for _ in range(self.profile.tokens - 1)]
        started = time.monotonic()
        time.sleep(ttft + sum(tpots))
        e2e = time.monotonic() - started
        prompt = len(str(request.get("prompt", "")).split())
        with self._lock:
            self.running -= 1
            self.ttft.observe(ttft)
            for value in tpots:
                self.tpot.observe(value)
            self.e2e.observe(e2e)
            self.success += 1
            self.prompt_tokens += prompt
            self.generation_tokens += self.profile.tokens
        return {
            "id": f"cmpl-{self.name}-{self.success}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": request.get("model") or self.model,
            "system_fingerprint": self.name,
            "choices": [
                {"index": 0, "text": " ok" * self.profile.tokens, "finish_reason": "length"}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": self.profile.tokens,
                "total_tokens": prompt + self.profile.tokens,
            },
        }

    def metrics_text(self) -> str:
        """``/metrics`` as vLLM writes it (Prometheus text format 0.0.4)."""
        labels = f'model_name="{self.model}"'
        with self._lock:
            lines = [
                *self.ttft.lines("vllm:time_to_first_token_seconds", labels),
                *self.tpot.lines("vllm:time_per_output_token_seconds", labels),
                *self.tpot.lines("vllm:inter_token_latency_seconds", labels),
                *self.e2e.lines("vllm:e2e_request_latency_seconds", labels),
                "# TYPE vllm:request_success_total counter",
                f'vllm:request_success_total{{finished_reason="length",{labels}}} {self.success}',
                "# TYPE vllm:prompt_tokens_total counter",
                f"vllm:prompt_tokens_total{{{labels}}} {self.prompt_tokens}",
                "# TYPE vllm:generation_tokens_total counter",
                f"vllm:generation_tokens_total{{{labels}}} {self.generation_tokens}",
                "# TYPE vllm:num_requests_running gauge",
                f"vllm:num_requests_running{{{labels}}} {self.running}",
                "# TYPE vllm:num_requests_waiting gauge",
                f"vllm:num_requests_waiting{{{labels}}} 0",
                "# TYPE vllm:kv_cache_usage_perc gauge",
                f"vllm:kv_cache_usage_perc{{{labels}}} {min(1.0, 0.05 * self.running)}",
            ]
        return "\n".join(lines) + "\n"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def histogram_quantile(q: float, bounds: list[float], cumulative: list[float]) -> float | None:
    """Prometheus' ``histogram_quantile`` over one histogram's cumulative bucket counts
    (the last is ``+Inf``): linear within the bucket the rank falls in."""
    total = cumulative[-1]
    if total <= 0:
        return None
    rank = q * total
    for i, count in enumerate(cumulative):
        if count >= rank:
            if i == len(bounds):
                return bounds[-1]
            lower = bounds[i - 1] if i else 0.0
            below = cumulative[i - 1] if i else 0.0
            inside = count - below
            return lower + (bounds[i] - lower) * ((rank - below) / inside if inside else 1.0)
    return bounds[-1]


@dataclass
class Outcome:
    """One request: who served it (``None``: nobody) and how it ended."""

    at: float
    served_by: str | None
    status: int | None
    error: str = ""


@dataclass
class LoadGenerator:
    """Completions to ``url`` from ``concurrency`` threads, at most ``rate`` per second in
    all, until stopped or ``limit`` requests were sent (bounded either way)."""

    url: str
    concurrency: int = 4
    rate: float = 200.0
    limit: int = 20_000
    timeout: float = 10.0
    outcomes: list[Outcome] = field(default_factory=list)

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.url)
        self._host, self._port = parts.hostname, parts.port
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._sent = 0
        self._threads: list[threading.Thread] = []
        self._interval = self.concurrency / self.rate

    def _one(self) -> Outcome:
        started = time.monotonic()
        body = json.dumps({"model": "llama-3-8b", "prompt": "hello there", "max_tokens": 8})
        connection = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
        try:
            connection.request(
                "POST", "/v1/completions", body, {"Content-Type": "application/json"}
            )
            response = connection.getresponse()
            response.read()
            return Outcome(started, response.getheader("X-Served-By"), response.status)
        except (OSError, http.client.HTTPException) as exc:
            return Outcome(started, None, None, f"{type(exc).__name__}: {exc}")
        finally:
            connection.close()

    def _work(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                if self._sent >= self.limit:
                    return
                self._sent += 1
            started = time.monotonic()
            outcome = self._one()
            with self._lock:
                self.outcomes.append(outcome)
            left = self._interval - (time.monotonic() - started)
            if left > 0:
                self._stop.wait(left)

    def start(self) -> LoadGenerator:
        self._stop.clear()
        self._threads = [
            threading.Thread(target=self._work, daemon=True) for _ in range(self.concurrency)
        ]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> list[Outcome]:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=self.timeout + 5)
        return self.outcomes

    def run(self, count: int) -> list[Outcome]:
        """Send ``count`` requests (blocking) and return their outcomes."""
        first = len(self.outcomes)
        self.limit = self._sent + count
        self.start()
        for thread in self._threads:
            thread.join(timeout=self.timeout * count)
        with self._lock:
            return self.outcomes[first:]


def share_served(outcomes: list[Outcome], name: str) -> float:
    """Percent of the answered requests that ``name`` served."""
    served = [o for o in outcomes if o.status == 200]
    return 100.0 * sum(o.served_by == name for o in served) / len(served) if served else 0.0


def lost(outcomes: list[Outcome]) -> list[Outcome]:
    """Requests that got no 200 answer (errors, resets, 5xx from the gateway)."""
    return [o for o in outcomes if o.status != 200]
