"""Serving figures read from a PromQL source count requests per endpoint the way the store
does: success + failed where the engine has a success counter (vLLM, MindIE), else the
requests it received (SGLang), so the error ratio is increase(failed) ÷ increase(all)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from inventory.models import Cluster
from telemetry.models import PromQLDataSource, ServingBinding
from telemetry.read.promql import serving as promql_serving
from telemetry.read.promql.client import ResultSeries

END = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


class _FakeReader:
    """Answers each ``sum by (…) (increase(…))`` query with ``answer(expr)``'s series (the
    quantile and scrape-count queries answer nothing)."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.client = self

    def _run(self, call):
        return call()

    def query(self, expr: str, at=None) -> list[ResultSeries]:
        if not expr.startswith("sum by"):
            return []
        found = self.answer(expr)
        return [] if found is None else [ResultSeries(found[0], [(END.timestamp(), found[1])])]


def _window(monkeypatch, answer, binding: ServingBinding):
    monkeypatch.setattr(promql_serving, "_Reader", lambda source: _FakeReader(answer))
    source = PromQLDataSource.objects.create(
        cluster=Cluster.objects.create(name="promql-serving", kind=Cluster.Kind.UNIFIED),
        url="http://127.0.0.1:9090",
    )
    return promql_serving.serving_window(
        source, bindings=[binding], start=END - timedelta(minutes=5), end=END
    )


def _named(family: str) -> str:
    return f'__name__=~"{family}"'


@pytest.mark.django_db
def test_sglangs_error_ratio_is_aborted_over_received(monkeypatch):
    labels = {"model_name": "qwen-72b", "instance": "10.0.0.1:30000"}

    def answer(expr: str):
        if _named("sglang:num_aborted_requests_total") in expr:
            return labels, 10.0
        if _named("sglang:num_requests_total") in expr:
            return labels, 200.0
        return None

    window = _window(
        monkeypatch, answer, ServingBinding(model_name="qwen-72b", instance="10.0.0.1:30000")
    )
    assert (window.requests, window.failed) == (200.0, 10.0)
    assert window.error_ratio == pytest.approx(0.05)  # not 10 ÷ 10: every request "failed"
    assert window.per_endpoint == {"qwen-72b@10.0.0.1:30000": 200.0}


@pytest.mark.django_db
def test_vllms_error_ratio_is_aborted_over_success_plus_aborted(monkeypatch):
    labels = {"model_name": "llama-3-8b", "instance": "10.0.0.2:8000"}

    def answer(expr: str):
        if _named("vllm:request_success_total") not in expr:
            return None
        return labels, 4.0 if 'finished_reason="abort"' in expr else 76.0

    window = _window(
        monkeypatch, answer, ServingBinding(model_name="llama-3-8b", instance="10.0.0.2:8000")
    )
    assert (window.requests, window.failed) == (80.0, 4.0)
    assert window.error_ratio == pytest.approx(0.05)
