"""Text that goes into a Plotly figure from data (names, labels, titles), made inert.

Plotly renders titles, legend names, tick labels and hover text as a small HTML subset
(``<a href>``, ``<b>``, ``<br>``…): a Prometheus label or a workload name like
``<a href="https://evil">click</a>`` would become a live link. Every string a chart builder
takes from data passes through :func:`chart_text`, which escapes ``& < >`` — Plotly shows
the entities as the characters they stand for, so the text reads the same and does nothing.
"""

from __future__ import annotations

import html
from collections.abc import Iterable


def chart_text(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=False)


def chart_texts(values: Iterable[object]) -> list[str]:
    return [chart_text(v) for v in values]
