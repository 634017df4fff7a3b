"""The one CSV writer every export uses (dashboards, showback, report, what-if, alerts, audit).

Every cell goes through :func:`csv_cell`, which neutralises spreadsheet formulas: text
starting with ``= + - @``, a tab or a carriage return gets a leading apostrophe (OWASP's
advice), so a workload, label, reason or rule title chosen by someone else never runs as a
formula in the spreadsheet of whoever opens the export. Numbers (``int``/``float``) stay
numbers. Write CSV only through :func:`csv_writer` / :func:`csv_response` — a bare
``csv.writer`` is a test failure (``tests/security``).

Headers are stable column identifiers, not translated, so scripts reading the files keep
working whatever the UI language (the same rule as the alerts export).
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.http import HttpResponse

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
# A plain number written as text ("-1.5e+03", what cost exports format) is not a formula.
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: Any) -> str:
    """One cell as text: times in ISO 8601, missing values empty, formulas neutralised."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return "" if not math.isfinite(value) else repr(value)
    if isinstance(value, datetime):
        return value.isoformat()
    text = str(value)
    # Names come from exporters and tenants; a leading = + - @ would run as a spreadsheet
    # formula. Numbers are not text here, so a negative number is left alone.
    if text[:1] in FORMULA_PREFIXES and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


class SafeCsvWriter:
    """``csv.writer`` with every cell passed through :func:`csv_cell`."""

    def __init__(self, out: Any) -> None:
        self._writer = csv.writer(out)

    def writerow(self, row: Iterable[Any]) -> None:
        self._writer.writerow([csv_cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(out: Any) -> SafeCsvWriter:
    """The writer for any CSV output (an ``HttpResponse``, a ``StringIO``, a file)."""
    return SafeCsvWriter(out)


def csv_attachment(filename: str) -> HttpResponse:
    """An empty ``text/csv`` download response named ``filename`` (.csv added)."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in filename) or "export"
    response["Content-Disposition"] = f'attachment; filename="{safe}.csv"'
    return response


def csv_response(
    *, filename: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> HttpResponse:
    """A downloadable CSV of ``rows`` under ``columns``."""
    response = csv_attachment(filename)
    writer = csv_writer(response)
    writer.writerow(columns)
    writer.writerows(rows)
    return response


def table_csv(name: str, table: dict) -> HttpResponse:
    """CSV of a dashboard table dict ``{"columns": [...], "rows": [[...], ...]}``."""
    return csv_response(filename=name, columns=table["columns"], rows=table["rows"])
